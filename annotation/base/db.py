"""Database expressions the annotation services use."""

from __future__ import annotations

from typing import Any

from django.db.models import F, Func, JSONField, Value


class JSONAppend(Func):
    """`column` with `value` (a string) appended to its JSON array: jsonb `||` on PostgreSQL, json_insert
    elsewhere (SQLite)."""

    output_field = JSONField()

    def __init__(self, column: str, value: str) -> None:
        super().__init__(F(column), Value(value))

    def _parts(self, compiler: Any, connection: Any) -> tuple[str, str, list[Any]]:
        column, value = (compiler.compile(e) for e in self.get_source_expressions())
        return column[0], value[0], [*column[1], *value[1]]

    def as_sql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:  # type: ignore[override]
        column, value, params = self._parts(compiler, connection)
        return f"json_insert({column}, '$[#]', {value})", params

    def as_postgresql(self, compiler: Any, connection: Any, **extra: Any) -> tuple[str, list[Any]]:
        column, value, params = self._parts(compiler, connection)
        return f"({column} || jsonb_build_array(({value})::text))", params
