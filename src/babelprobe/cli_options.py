"""Command-line options made from a config model's ``option(...)`` fields (config.py), so that each
option is defined once, help text included, and means the same in every family.

``command_for(config_cls, body)`` returns a function typer can register: its signature lists one
typer option per field (two for a "path-or-off" field: --cache PATH and --no-cache), and it
calls ``body(fields)`` with only the values the user gave, so the config's own defaults apply.
"""

from __future__ import annotations

import inspect
from types import UnionType
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable, Literal, Optional, Union, get_args, get_origin

import typer
from pydantic import BaseModel
from pydantic.fields import FieldInfo

from babelprobe.config import RunOptions, cli_spec

HEAD = ("out", "model", "data", "langs", "limit")


@dataclass(frozen=True)
class CliOption:
    field: str
    flag: str  # e.g. --batch-size
    style: str
    help: str
    off_help: str | None


def cli_options(config_cls: type[BaseModel]) -> list[CliOption]:
    """The fields of ``config_cls`` that are options, in help order."""
    own = [f for f in config_cls.model_fields if f not in RunOptions.model_fields]
    order = [*HEAD, *own, *(f for f in RunOptions.model_fields if f not in HEAD)]
    out = []
    for name in order:
        info = config_cls.model_fields.get(name)
        cli = cli_spec(info)
        if info is None or cli is None:
            continue
        out.append(CliOption(name, cli.flag or "--" + name.replace("_", "-"), cli.style, info.description or "",
                             cli.off_help))
    return out


def flag_of(config_cls: type[BaseModel], field: str) -> str:
    """The flag a config field is set by (for error messages); the field name if it has none."""
    return next((o.flag for o in cli_options(config_cls) if o.field == field), field)


def _value_type(annotation: Any) -> type:
    """The click-level type of a field: Path, int or str (Literal values and lists arrive as str)."""
    union = get_origin(annotation) in (Union, UnionType)
    args = [a for a in get_args(annotation) if a is not type(None)] if union else [annotation]
    base = args[0] if args else annotation
    if get_origin(base) is Literal:
        return type(get_args(base)[0])
    return base if base in (Path, int, str) else str


def _cli_default(info: FieldInfo, style: str) -> Any:
    """The field's default as the option shows and passes it (None: no default shown)."""
    if info.default_factory is not None or info.default is None:
        return None
    if style == "comma":
        return ",".join(str(x) for x in info.default)
    return info.default


def _parameters(config_cls: type[BaseModel]) -> list[inspect.Parameter]:
    params = []

    def add(name: str, annotation: Any, default: Any) -> None:
        params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default, annotation=annotation))

    for option in cli_options(config_cls):
        info = config_cls.model_fields[option.field]
        if option.style == "flag":
            add(option.field, bool, typer.Option(False, option.flag, help=option.help))
        elif option.style == "switch":
            add(option.field, bool, typer.Option(info.default, f"{option.flag}/--no-{option.flag[2:]}", help=option.help))
        elif option.style == "repeat":
            add(option.field, list[str], typer.Option([], option.flag, help=option.help))
        elif option.style == "path-or-off":
            add(option.field, Optional[Path], typer.Option(None, option.flag, help=option.help))
            add(f"no_{option.field}", bool, typer.Option(False, f"--no-{option.flag[2:]}", help=option.off_help))
        elif info.is_required():
            add(option.field, _value_type(info.annotation), typer.Option(..., option.flag, help=option.help))
        else:
            kind = str if option.style == "comma" else _value_type(info.annotation)
            add(option.field, Optional[kind], typer.Option(_cli_default(info, option.style), option.flag,
                                                           help=option.help))
    return params


def given_fields(config_cls: type[BaseModel], values: dict[str, Any]) -> dict[str, Any]:
    """Config fields from parsed option values; None (an option without a default, not given)
    is left out so that the config's own default applies."""
    fields: dict[str, Any] = {}
    for option in cli_options(config_cls):
        value = values[option.field]
        if option.style == "path-or-off" and values[f"no_{option.field}"]:
            fields[option.field] = None
        elif option.style in ("flag", "switch") or (value is not None and value != []):
            fields[option.field] = value
    return fields


def command_for(config_cls: type[BaseModel], help: str, body: Callable[[dict[str, Any]], None]) -> Callable[..., None]:
    """A typer command whose options are the config's option fields."""

    def command(**values: Any) -> None:
        body(given_fields(config_cls, values))

    params = _parameters(config_cls)
    command.__signature__ = inspect.Signature(params)  # type: ignore[attr-defined]
    command.__annotations__ = {p.name: p.annotation for p in params}
    command.__doc__ = help
    return command
