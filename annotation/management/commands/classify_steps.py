"""A study kind's command (annotation/kinds/<kind>/commands/ holds one of this module's name): Django finds a
command only here, the registry finds the kind whose command it is."""

from annotation.kinds import kind_command

Command = kind_command(__name__)
