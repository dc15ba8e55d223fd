"""Human annotation studies (Study, StudyItem, Participant, Assignment, Annotation) arrive with issue #4."""
