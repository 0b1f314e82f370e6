"""Migration operations the apps share."""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.operations import AddIndexConcurrently
from django.db.migrations.operations import AddIndex
from django.db.migrations.operations.base import Operation
from django.db.models import NOT_PROVIDED


class AddIndexOnline(AddIndexConcurrently):
    """An index built with CREATE INDEX CONCURRENTLY on PostgreSQL, so that a table of a year
    of orders keeps taking writes while it is built (the migration must be `atomic = False`);
    a plain CREATE INDEX elsewhere (the demo's SQLite)."""

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_forwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_forwards(self, app_label, schema_editor, from_state, to_state)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor == "postgresql":
            super().database_backwards(app_label, schema_editor, from_state, to_state)
        else:
            AddIndex.database_backwards(self, app_label, schema_editor, from_state, to_state)


class KeepDatabaseDefault(Operation):
    """Gives a column, on PostgreSQL, the database default its field already declares in the
    migrations' state: for databases that took the column before the field had one. Nothing
    changes in the state; on a database that has the default, it is set again (a change of the
    catalogue only, under the migrations' lock timeout)."""

    reversible = True

    def __init__(self, model_name: str, name: str) -> None:
        self.model_name, self.name = model_name, name

    def deconstruct(self) -> tuple[str, list[Any], dict[str, Any]]:
        return self.__class__.__name__, [], {"model_name": self.model_name, "name": self.name}

    def state_forwards(self, app_label: str, state: Any) -> None:
        return None

    def database_forwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        if schema_editor.connection.vendor != "postgresql":
            return  # the demo's SQLite runs one release at a time
        model = to_state.apps.get_model(app_label, self.model_name)
        field = model._meta.get_field(self.name)
        before = field.clone()
        before.set_attributes_from_name(self.name)
        before.model = model
        before.db_default = NOT_PROVIDED
        schema_editor.alter_field(model, before, field)

    def database_backwards(
        self, app_label: str, schema_editor: Any, from_state: Any, to_state: Any
    ) -> None:
        return None

    def describe(self) -> str:
        return f"Keep the database default of {self.model_name}.{self.name}"

    @property
    def migration_name_fragment(self) -> str:
        return f"{self.model_name}_{self.name}_database_default"
