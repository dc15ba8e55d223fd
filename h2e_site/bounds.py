"""How large a number or a JSON value a person may send: the one place forms, serializers, the admin and the
management commands take their bounds from.

Numbers. A model field's range is its column's (PostgreSQL `integer` ±2^31, `smallint` ±2^15, which Django
adds to an integer field's validators) narrowed by the field's own validators (a sensible range for what it
means: `Range(0, 3600).validators()` on a number of seconds). `model_range(Study, "min_dwell_seconds")` reads
the range off the field, so a form, a serializer or a command that takes a value for that column builds its
field from it (`Range.form_field`, `Range.api_field`) or checks it (`Range.check`), and a new validator on
the model reaches all of them. A number that lands in no column of its own has a named Range here (SEED).

JSON. Text is measured before it is parsed (`json_loads_bounded`): at most MAX_JSON_CHARS characters and
MAX_JSON_DEPTH levels of nesting, so a value nested 50,000 deep is refused naming its field instead of
raising RecursionError in the parser. BoundedJSONFormField (every admin JSON field, through
BoundedJSONAdmin) and h2e_site.api's BoundedJSONParser (every API body) use it.

The module is read by models and forms at every start: the API's library (rest_framework) is imported only
where a serializer field is built (Range.api_field).
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from django import forms
from django.contrib import admin
from django.contrib.admin.widgets import AutocompleteSelect
from django.core.exceptions import ValidationError
from django.core.validators import MaxValueValidator, MinValueValidator
from django.db import models
from django.forms.fields import InvalidJSONInput

if TYPE_CHECKING:
    from rest_framework import serializers

INT32_MAX = 2**31 - 1
MAX_JSON_CHARS = 1_000_000
MAX_JSON_DEPTH = 32
_JSON_STRING = re.compile(r'"(?:[^"\\]|\\.)*"', re.DOTALL)
_JSON_BRACKET = re.compile(r"[\[\]{}]")


class OutOfRange(ValueError):
    """A number outside its field's range; the message names the field, the value and the range."""

    def __init__(self, field: str, value: object, expected: str) -> None:
        shown = str(value)
        shown = shown if len(shown) <= 40 else shown[:37] + "..."
        super().__init__(f"{field}: {shown} is not {expected}")
        self.field = field
        self.message = str(self)


@dataclass(frozen=True)
class Range:
    """The numbers a field takes, both ends included."""

    low: float
    high: float

    @property
    def expected(self) -> str:
        return f"a number from {_shown(self.low)} to {_shown(self.high)}"

    def validators(self) -> list[Any]:
        """For a model field: the range is then part of the field, and model_range() finds it."""
        return [MinValueValidator(self.low), MaxValueValidator(self.high)]

    def check(self, field: str, value: float) -> float:
        """`value` when it is a finite number in range; else OutOfRange naming `field`."""
        if isinstance(value, bool) or not isinstance(value, int | float):
            raise OutOfRange(field, value, self.expected)
        if (isinstance(value, float) and not math.isfinite(value)) or not self.low <= value <= self.high:
            raise OutOfRange(field, value, self.expected)
        return value

    def form_field(self, *, whole: bool = True, **kwargs: Any) -> forms.Field:
        """An IntegerField (whole=False: a FloatField) of a form, refusing what is out of range."""
        if whole:
            return forms.IntegerField(min_value=int(self.low), max_value=int(self.high), **kwargs)
        return forms.FloatField(min_value=self.low, max_value=self.high, **kwargs)

    def api_field(self, *, whole: bool = True, **kwargs: Any) -> serializers.Field:
        """The same for a serializer."""
        from rest_framework import serializers  # the API's library: not loaded by models and forms

        if whole:
            return serializers.IntegerField(min_value=int(self.low), max_value=int(self.high), **kwargs)
        return serializers.FloatField(min_value=self.low, max_value=self.high, **kwargs)


SEED = Range(0, INT32_MAX)  # a seed: numpy's generators take no negative seed; it is stored as an integer


def model_range(model: type[models.Model], name: str) -> Range:
    """The range of a model's number field: its column's, narrowed by the field's validators."""
    field = model._meta.get_field(name)
    assert isinstance(field, models.Field), f"{model.__name__}.{name} is not a column"
    low, high = -math.inf, math.inf
    for validator in field.validators:  # an integer field's include its column's range
        if isinstance(validator, MinValueValidator):
            low = max(low, validator.limit_value)  # type: ignore[call-overload]
        elif isinstance(validator, MaxValueValidator):
            high = min(high, validator.limit_value)  # type: ignore[call-overload]
    if isinstance(field, models.FloatField):
        low, high = max(low, -1e308), min(high, 1e308)  # double precision
    return Range(low, high)


def _shown(number: float) -> str:
    return str(int(number)) if float(number).is_integer() else str(number)


# --- JSON ----------------------------------------------------------------------------------------------


def json_depth(text: str) -> int:
    """How deeply the arrays and objects of JSON text nest (strings skipped), without parsing it."""
    depth = deepest = 0
    for bracket in _JSON_BRACKET.findall(_JSON_STRING.sub('""', text)):
        depth += 1 if bracket in "[{" else -1
        deepest = max(deepest, depth)
    return deepest


def json_loads_bounded(
    field: str, text: str | bytes, *, max_chars: int = MAX_JSON_CHARS, max_depth: int = MAX_JSON_DEPTH
) -> Any:
    """JSON text parsed once it is known to be small and shallow enough; ValueError naming `field` when it
    is too long, too deep or not JSON."""
    if isinstance(text, bytes):
        text = text.decode("utf-8")
    if len(text) > max_chars:
        raise ValueError(f"{field}: {len(text):,} characters of JSON, more than {max_chars:,}")
    depth = json_depth(text)
    if depth > max_depth:
        raise ValueError(f"{field}: JSON nested {depth:,} deep, more than {max_depth}")
    try:
        value = json.loads(text, parse_constant=_no_constant, parse_float=_finite)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{field}: not valid JSON ({exc})") from exc
    where = _unstorable_path(value)
    if where is not None:
        path, problem = where
        raise JSONRefused(field, path, problem)
    return value


def _no_constant(name: str) -> None:
    """NaN and Infinity are not JSON (PostgreSQL's jsonb cannot store them)."""
    raise json.JSONDecodeError(f"{name} is not a JSON number", name, 0)


def _finite(text: str) -> float:
    """A JSON number too large for a double (1e999) is refused, not read as infinity."""
    number = float(text)
    if not math.isfinite(number):
        raise json.JSONDecodeError(f"{text[:20]} is too large a number", text, 0)
    return number


_SURROGATE = re.compile("[\ud800-\udfff]")
_SHOWN = re.compile("[\x00\ud800-\udfff]")  # shown escaped in a key named in a refusal
_NUL = "holds a NUL character (\\u0000), which cannot be stored"
_LONE_SURROGATE = "holds a lone surrogate (\\ud800-\\udfff), which is no character and cannot be stored"


def _unstorable(text: str) -> str | None:
    if "\x00" in text:
        return _NUL
    return _LONE_SURROGATE if _SURROGATE.search(text) else None


def _unstorable_path(
    value: Any, path: tuple[str | int, ...] = ()
) -> tuple[tuple[str | int, ...], str] | None:
    """Where a parsed JSON value (nested at most MAX_JSON_DEPTH deep) has a NUL or a lone surrogate (JSON
    text may escape either: "\\u0000", "\\ud800") in a key or a string, and which: PostgreSQL stores
    neither."""
    if isinstance(value, str):
        problem = _unstorable(value)
        return (path, problem) if problem else None
    items: Any = (
        value.items() if isinstance(value, dict) else enumerate(value) if isinstance(value, list) else ()
    )
    for key, item in items:
        problem = _unstorable(key) if isinstance(key, str) else None
        if problem:
            return (*path, _SHOWN.sub(lambda m: f"\\u{ord(m.group()):04x}", key)), problem
        found = _unstorable_path(item, (*path, key))
        if found is not None:
            return found
    return None


class JSONRefused(ValueError):
    """JSON whose value cannot be stored; `path` leads to the part concerned (the body's field first)."""

    def __init__(self, field: str, path: tuple[str | int, ...], problem: str) -> None:
        where = "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)
        super().__init__(f"{field}{where}: {problem}")
        self.path = path


class BoundedJSONFormField(forms.JSONField):
    """Django's JSON form field, measuring the text before parsing it (json_loads_bounded), also when the
    form is shown again with what was sent."""

    def __init__(self, *, empty: Callable[[], Any] | None = None, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.empty = empty  # what an emptied field becomes (a column that holds no NULL: its default)

    def to_python(self, value: Any) -> Any:
        if self.empty is not None and not self.disabled and value in self.empty_values:
            return self.empty()
        if isinstance(value, str) and not self.disabled and value not in self.empty_values:
            try:
                json_loads_bounded("JSON", value)
            except ValueError as exc:
                raise ValidationError(str(exc).removeprefix("JSON: "), code="invalid") from None
        return super().to_python(value)

    def bound_data(self, data: Any, initial: Any) -> Any:
        if isinstance(data, str) and not self.disabled:
            try:
                json_loads_bounded("JSON", data)
            except ValueError:
                return InvalidJSONInput(data)
        return super().bound_data(data, initial)


class ValidAutocompleteSelect(AutocompleteSelect):
    """Django's autocomplete select, which shows a form sent back with a value that is no key (a NUL, a
    word) as refused instead of failing on it while it looks the value up."""

    def optgroups(self, name: str, value: Any, attr: Any = None) -> Any:
        return super().optgroups(name, [v for v in value if self._is_key(v)], attr)

    def _is_key(self, value: Any) -> bool:
        try:
            self.field.target_field.to_python(value)
        except ValidationError:
            return False
        return "\x00" not in str(value)


class ConstrainedModelForm(forms.ModelForm):  # type: ignore[type-arg]
    """A ModelForm that checks every constraint of its model before saving, those naming a field the form
    does not show (read-only in the admin) included: Django's ModelForm skips such a constraint, and the
    database then refuses the row (an IntegrityError, a 500). A violation is shown under its field when the
    form has it, else above the form."""

    def _post_clean(self) -> None:
        super()._post_clean()  # type: ignore[misc]
        refused = {name for name in self.errors if name in self.fields}  # their values never reached the row
        try:
            self.instance.validate_constraints(exclude=refused)
        except ValidationError as violations:
            shown = {str(message) for messages in self.errors.values() for message in messages}
            for name, messages in violations.message_dict.items():
                for message in messages:
                    if message not in shown:
                        self.add_error(name if name in self.fields else None, message)


class BoundedJSONAdmin(admin.options.BaseModelAdmin):  # type: ignore[type-arg]
    """Mixed into every ModelAdmin and inline: its JSON fields are BoundedJSONFormFields, its autocomplete
    fields ValidAutocompleteSelects, its form checks every constraint of the model (ConstrainedModelForm)."""

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        if self.form is forms.ModelForm:  # a ModelAdmin naming its own form makes it a ConstrainedModelForm
            self.form = ConstrainedModelForm

    def formfield_for_foreignkey(self, db_field: Any, request: Any, **kwargs: Any) -> Any:
        if db_field.name in self.get_autocomplete_fields(request) and "widget" not in kwargs:
            kwargs["widget"] = ValidAutocompleteSelect(db_field, self.admin_site, using=kwargs.get("using"))
        return super().formfield_for_foreignkey(db_field, request, **kwargs)

    def formfield_for_dbfield(self, db_field: models.Field, request: Any, **kwargs: Any) -> Any:  # type: ignore[type-arg]
        if isinstance(db_field, models.JSONField):
            kwargs.setdefault("form_class", BoundedJSONFormField)
            if db_field.blank and not db_field.null:  # emptied: the default ([] or {}), not NULL
                kwargs.setdefault("empty", db_field.get_default)
        return super().formfield_for_dbfield(db_field, request, **kwargs)


__all__ = [
    "INT32_MAX",
    "MAX_JSON_CHARS",
    "MAX_JSON_DEPTH",
    "SEED",
    "BoundedJSONAdmin",
    "BoundedJSONFormField",
    "ConstrainedModelForm",
    "JSONRefused",
    "OutOfRange",
    "Range",
    "json_depth",
    "json_loads_bounded",
    "model_range",
]
