"""What every renderer reads: the manifest (``aimux.manifest``: the catalogue and the ops with their
schemas) plus the code→kind rule, checked once (unique class names and constants, codes in their
domain's range)."""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Manifest:
    name: str
    version: str
    abi_version: int
    kinds: list[str]
    errors: list[dict[str, Any]]
    ops: list[dict[str, Any]]
    retired_codes: list[int]
    kind_ranges: dict[str, tuple[int, int]]

    @classmethod
    def of(cls, manifest: dict[str, Any], kind_ranges: dict[str, tuple[int, int]]) -> Manifest:
        m = cls(
            name=str(manifest["name"]),
            version=str(manifest["version"]),
            abi_version=int(manifest["abiVersion"]),
            kinds=list(manifest["kinds"]),
            errors=list(manifest["errors"]),
            ops=list(manifest["ops"]),
            retired_codes=sorted(int(c) for c in manifest.get("retiredCodes", [])),
            kind_ranges=dict(kind_ranges),
        )
        m.check()
        return m

    def check(self) -> None:
        classes: set[str] = set()
        constants: set[str] = set()
        if list(self.kind_ranges) != self.kinds:
            raise ValueError(f"kind ranges {list(self.kind_ranges)} != kinds {self.kinds}")
        for e in self.errors:
            for key in ("kind", "code", "name", "className", "constant"):
                if e.get(key) in (None, ""):
                    raise ValueError(f"catalogue entry {e} lacks {key!r}")
            check_ident(re.compile(r"^[A-Z][A-Za-z0-9]*$"), e["className"], "className")
            check_ident(re.compile(r"^[A-Z][A-Z0-9_]*$"), e["constant"], "constant")
            if e["className"] in classes:
                raise ValueError(f"duplicate className {e['className']}")
            if e["constant"] in constants:
                raise ValueError(f"duplicate constant {e['constant']} (AIMUX_CODE_ must be unique)")
            classes.add(e["className"])
            constants.add(e["constant"])
            low, high = self.kind_ranges[e["kind"]]
            if not low <= int(e["code"]) <= high:
                raise ValueError(f"{e['className']}: code {e['code']} outside {e['kind']} range")
            if int(e["code"]) in self.retired_codes:
                raise ValueError(f"{e['className']}: code {e['code']} is retired")

    def by_constant(self, constant: str) -> dict[str, Any]:
        for e in self.errors:
            if e["constant"] == constant:
                return e
        raise KeyError(constant)


def check_ident(pattern: re.Pattern[str], value: str, what: str) -> None:
    if not pattern.match(value):
        raise ValueError(f"{what} {value!r} is not a valid identifier")


def words(identifier: str) -> list[str]:
    """``APICall`` → [API, Call]; ``modelId`` → [model, Id]; ``UNKNOWN_OP`` → [UNKNOWN, OP]."""
    if identifier.upper() == identifier:
        return [w for w in identifier.split("_") if w]
    return re.findall(r"[A-Z]+[0-9]*(?=[A-Z][a-z]|$|_)|[A-Z]?[a-z0-9]+|[A-Z]+[0-9]*", identifier)
