"""The rule of promoted groups: a consumer's own definition of a group that the base
vocabulary it extends has since taken in.

Promoting a group from a consumer to the base is meant to be cheap, so a release that
promotes one must not break the consumers that still define it. When a consumer's schema
``extends`` another file (``"nemo.lens"``, the base shipped in the package) and defines a
group that base defines too, the schema stays valid: the consumer inherits the base group
(its constant, its tier, its category, its bucket) and its presets keep listing it, so
deleting the local definition afterwards changes nothing the consumer generates. Each such
definition gets one warning that names the base release the group came in (its ``since``),
says how to remove the definition, and, where the two disagree on what changes behaviour
(``fires``, ``category``, ``bucket``, ``renamed_to``), which field differs, both values, and
that the base wins; a consumer that wants its own category keeps it with its
``categories = { NAME = "..." }`` override. Descriptions, ``since`` and notes may differ
freely. Within one schema file (the base and its consumers together) a consumer redefining
a base group is still an error: there is no release in between, so remove one of the two.
"""

from __future__ import annotations

from collections.abc import Mapping

from nemo.lens.codegen.checker import Checker
from nemo.lens.codegen.locate import KeyPath
from nemo.lens.codegen.model import Group, GroupClass

__all__ = ["warn_promoted"]


def _value(text: str) -> str:
    return repr(text) if text else "none"


def _differences(local: Group, base: Group, overrides: Mapping[str, str], table: str) -> list[str]:
    """What differs in behaviour, as `FIELD is X in the base, Y here`; a differing category
    says how the consumer keeps its own."""
    name = local.name
    found = []
    if local.fires != base.fires:
        found.append(f"fires is {base.fires!r} in the base, {local.fires!r} here")
    category = overrides.get(name, base.category)
    if local.category != category and name in overrides:
        # Two categories only: the override says the other one, the local one is the base's.
        found.append(
            f"category is {category!r} by the categories of [{table}], {local.category!r} "
            f"here (to keep {local.category!r}, remove {name!r} from those categories)"
        )
    elif local.category != category:
        found.append(
            f"category is {category!r} in the base, {local.category!r} here (to keep "
            f'{local.category!r}, write categories = {{ {name} = "{local.category}" }} '
            f"in [{table}])"
        )
    if local.bucket != base.bucket:
        found.append(f"bucket is {_value(base.bucket)} in the base, {_value(local.bucket)} here")
    if local.renamed_to != base.renamed_to:
        text = (
            f"renamed_to is {_value(base.renamed_to)} in the base, {_value(local.renamed_to)} here"
        )
        if not base.renamed_to:
            text += f" ({name!r} now names the base group, not an old name)"
        found.append(text)
    return found


def warn_promoted(
    chk: Checker,
    path: KeyPath,
    consumer: str,
    class_name: str,
    local: Group,
    base_class: GroupClass,
    overrides: Mapping[str, str],
    base_source: str,
) -> None:
    """Warn about *local*, consumer *consumer*'s definition (at *path*) of a group that
    *base_class*, the base vocabulary of *base_source*, defines too; *overrides* are the
    consumer's categories of inherited groups."""
    table = f"consumers.{consumer}"
    name = local.name
    base = next(g for g in base_class.groups if g.name == name)
    origin = f"{base_class.class_name}.{base.constant} of {base_source}"
    if base.renamed_to:
        origin += f", deprecated there: renamed to {base.renamed_to!r}"
    message = (
        f"group {name!r} is a base group since {base.since} ({origin}), which "
        f"{class_name or consumer} inherits"
    )
    found = _differences(local, base, overrides, table)
    if found:
        message += "; the base definition wins where the two differ: " + "; ".join(found)
    message += (
        f"; this definition can go: delete the [{table}.groups.{name}] table "
        f"(keep {name!r} in the presets that list it)"
    )
    chk.warn(path, message)
