"""The one generator (``aimux_ops.codegen``): adding an error is one Python change, everything
else regenerates; the C constants compile; names map the same way in every language."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

from aimux_ops.codegen import INPUTS, OWNED_DIRS, generate
from aimux_ops.codegen.go import go_name
from aimux_ops.errors import catalogue

REPO = Path(__file__).resolve().parent.parent

THROWAWAY = '''

class ThrowawayBindingError(BindingError, code=299):
    """A variant that exists only in this test."""

    detail: str | None = None
'''


def _codegen(root: Path, *args: str) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(root)}
    return subprocess.run(
        [sys.executable, "-m", "aimux_ops.codegen", "--root", str(root), *args],
        cwd=root,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )


def _snapshot(root: Path) -> dict[str, bytes]:
    return {
        p.relative_to(root).as_posix(): p.read_bytes()
        for p in root.rglob("*")
        if p.is_file() and "__pycache__" not in p.parts
    }


def test_a_new_error_is_one_python_change_and_everything_else_regenerates(tmp_path: Path) -> None:
    generated = generate(REPO)
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "aimux_ops", root / "aimux_ops", ignore=shutil.ignore_patterns("__pycache__")
    )
    for rel in [*generated, *INPUTS]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    assert _codegen(root, "--check").returncode == 0
    before = _snapshot(root)

    # the one hand-written change: declare the error
    errors_file = root / "aimux_ops" / "errors" / "binding.py"
    errors_file.write_text(errors_file.read_text(encoding="utf-8") + THROWAWAY, encoding="utf-8")

    check = _codegen(root, "--check")
    assert check.returncode == 1
    drifted = {
        line.split("codegen drift: ", 1)[1].split(" ", 1)[0]
        for line in check.stderr.splitlines()
        if line.startswith("codegen drift: ")
    }
    java = "bindings/java/src/generated/java/dev/aimux/errors"
    expected = {
        "schema/manifest.json",
        "schema/errors/binding/ThrowawayBindingError.schema.json",
        "native/aimux_codes.h",
        "bindings/go/aimux/aimux_codes.h",
        "bindings/go/aimux/zz_generated.go",
        "bindings/node/src/generated/variants.js",
        "bindings/node/src/generated/variants.d.ts",
        f"{java}/AimuxErrorType.java",
        f"{java}/ThrowawayBindingError.java",
        f"{java}/ThrowawayBindingException.java",
        f"{java}/ThrowawayBindingCauseException.java",
        "docs/DESIGN.md",
    }
    assert expected <= drifted, sorted(expected - drifted)

    wrote = _codegen(root, "--write")
    assert wrote.returncode == 0, wrote.stderr
    assert _codegen(root, "--check").returncode == 0
    after = _snapshot(root)
    changed = {rel for rel in after if before.get(rel) != after[rel]}
    hand_written = {rel for rel in changed if rel.startswith("aimux_ops/")}
    assert hand_written == {"aimux_ops/errors/binding.py"}
    assert changed - hand_written == drifted

    text = {rel: after[rel].decode("utf-8") for rel in changed}
    assert "#define AIMUX_CODE_THROWAWAY_BINDING" in text["native/aimux_codes.h"]
    assert "CodeThrowawayBinding" in text["bindings/go/aimux/zz_generated.go"]
    assert (
        "export class ThrowawayBindingError extends AimuxError"
        in text["bindings/node/src/generated/variants.js"]
    )
    assert "BINDING_THROWAWAY_BINDING" in text[f"{java}/AimuxErrorType.java"]
    assert (
        "| binding | 299 | THROWAWAY_BINDING | ThrowawayBindingError | detail |"
        in text["docs/DESIGN.md"]
    )


def test_generated_files_are_committed_and_current() -> None:
    generated = generate(REPO)
    for rel, data in generated.items():
        assert (REPO / rel).read_bytes() == data, f"{rel} drifted: run `make schema`"
    for d in OWNED_DIRS:
        for p in (REPO / d).rglob("*"):
            if p.is_file():
                assert p.relative_to(REPO).as_posix() in generated, f"{p} is not generated"


def test_a_c_program_uses_the_codes_from_aimux_h(tmp_path: Path) -> None:
    cc = shutil.which(os.environ.get("CC", "cc"))
    if cc is None:
        pytest.fail("no C compiler")
    src = tmp_path / "codes.c"
    src.write_text(
        '#include <stdio.h>\n#include "aimux.h"\n'
        "int main(void) {\n"
        '    printf("%d %d %s %s %s\\n", AIMUX_CODE_API_CALL, AIMUX_CODE_INVALID_UTF8,\n'
        "           aimux_code_kind(AIMUX_CODE_RETRY), aimux_code_kind(AIMUX_CODE_WRONG_MODE),\n"
        '           aimux_code_kind(0) ? "?" : "null");\n'
        "    return 0;\n}\n",
        encoding="utf-8",
    )
    exe = tmp_path / "codes"
    subprocess.run(
        [
            cc,
            "-std=c99",
            "-Wall",
            "-Wextra",
            "-Werror",
            f"-I{REPO / 'native'}",
            str(src),
            "-o",
            str(exe),
        ],
        check=True,
    )
    out = subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout
    assert out.split() == ["11", "201", "aimux", "protocol", "null"]
    codes = (REPO / "native" / "aimux_codes.h").read_text(encoding="utf-8")
    for cls in catalogue():
        assert f"#define AIMUX_CODE_{cls.constant} " in codes


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("statusCode", "StatusCode"),
        ("modelId", "ModelID"),
        ("API_CALL", "APICall"),
        ("aimux", "Aimux"),
        ("responseHeaders", "ResponseHeaders"),
        ("baseURL", "BaseURL"),
        ("timeoutMs", "TimeoutMs"),
        ("INVALID_UTF8", "InvalidUTF8"),
    ],
)
def test_go_names(name: str, want: str) -> None:
    assert go_name(name) == want


# --- No hand-written binding restates the catalogue (issue 14) ---------------------------------

#: Hand-written binding sources: every generated file, test and node_modules is left out.
_SOURCE_SUFFIXES = (".js", ".mjs", ".cjs", ".ts", ".go", ".java", ".kt", ".hpp", ".h", ".cpp", ".c")
_NOT_SOURCES = ("node_modules", "test", "tests", "target", "build")


def _strip_comments(text: str) -> str:
    """``text`` with its ``//`` and ``/* */`` comments blanked (string, char and template literals
    kept whole, so a URL or ``//`` inside a string is not a comment)."""
    out: list[str] = []
    i, n = 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'`":
            j = i + 1
            while j < n and text[j] != c and not (c != "`" and text[j] == "\n"):
                j += 2 if text[j] == "\\" else 1
            out.append(text[i : j + 1])
            i = j + 1
        elif text.startswith("//", i):
            j = text.find("\n", i)
            i = n if j < 0 else j
        elif text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append("\n" * text.count("\n", i, j))
            i = j
        else:
            out.append(c)
            i += 1
    return "".join(out)


def _catalogue_literals(text: str) -> list[str]:
    """The places where ``text`` (a binding source) writes a catalogue code, kind or error name
    as a literal in an envelope: ``code: 207``, ``"code":300``, ``put("code", 202)``,
    ``kind: 'binding'``, ``"RuntimeInitError"``. Comments do not count."""
    import re

    codes = {e.code for e in catalogue()}
    names = {e.error_name for e in catalogue()}
    kinds = {e.kind for e in catalogue()}
    q = r"""\\?["'`]"""  # a quote, or an escaped one inside a C/C++ string
    found = []
    code = re.compile(rf"\bcode(?:{q})?\s*[:,=]\s*(\d+)\b", re.IGNORECASE)
    kind = re.compile(rf"\bkind(?:{q})?\s*[:,=]\s*{q}(\w+){q}", re.IGNORECASE)
    name = re.compile(rf"{q}(\w+){q}")
    code_text = _strip_comments(text)
    for lineno, line in enumerate(code_text.splitlines(), 1):
        found += [f"{lineno}: code {m[1]}" for m in code.finditer(line) if int(m[1]) in codes]
        found += [f"{lineno}: kind {m[1]}" for m in kind.finditer(line) if m[1] in kinds]
        found += [f"{lineno}: name {m[1]}" for m in name.finditer(line) if m[1] in names]
    return found


def _hand_written_binding_sources(root: Path) -> list[Path]:
    generated = set(generate(REPO))
    out = []
    for p in sorted((root / "bindings").rglob("*")):
        rel = p.relative_to(root)
        if (
            p.is_file()
            and p.name.endswith(_SOURCE_SUFFIXES)
            and rel.as_posix() not in generated
            and not any(d in _NOT_SOURCES for d in rel.parts[:-1])
            and "generated" not in rel.parts
            and not p.name.endswith("_test.go")
        ):
            out.append(p)
    return out


def test_the_scanner_finds_envelope_literals_and_ignores_comments() -> None:
    found = _catalogue_literals(
        "// code: 202 in a comment, kind: 'binding', \"RuntimeInitError\"\n"
        "/* put(\"code\", 207) */ const url = 'http://x'; // code: 300\n"
        "const e = { kind: 'binding', code: 207, error: { name: 'RuntimeInitError' } };\n"
        'env.put("code", 202); env.put("kind", "protocol");\n'
        'throw decode("{\\"kind\\":\\"protocol\\",\\"code\\":300,\\"error\\":{\\"name\\":'
        '\\"UnknownOpError\\"}}");\n'
        "if (code >= 1 && exitCode == 3) { code = ErrorCode.INTERNAL; }\n"
    )
    assert found == [
        "3: code 207",
        "3: kind binding",
        "3: name RuntimeInitError",
        "4: code 202",
        "4: kind protocol",
        "5: code 300",
        "5: kind protocol",
        "5: name UnknownOpError",
    ]


def test_no_binding_writes_a_catalogue_code_kind_or_name_by_hand() -> None:
    sources = _hand_written_binding_sources(REPO)
    # The scan covers every binding's own sources (a renamed folder must not empty it).
    for must in (
        "bindings/node/src/index.js",
        "bindings/node/src/native.js",
        "bindings/go/aimux/native.go",
        "bindings/java/src/main/java/dev/aimux/Envelopes.java",
        "bindings/java/src/main/java/dev/aimux/types/JsonObject.java",
        "bindings/kotlin/src/main/kotlin/dev/aimux/kotlin/Aimux.kt",
        "bindings/cpp/aimux.hpp",
    ):
        assert REPO / must in sources, must
    offenders = {
        p.relative_to(REPO).as_posix(): hits
        for p in sources
        if (hits := _catalogue_literals(p.read_text(encoding="utf-8")))
    }
    assert offenders == {}, (
        "use the generated constants (ErrorCode / kindOfCode / the variant classes in Node, "
        "Code*/KindOfCode in Go, AimuxErrorType in Java, aimux::codes / aimux_code_kind / "
        f"aimux::error_names in C++) instead of literals: {offenders}"
    )


def test_a_new_op_field_reaches_the_go_types_by_make_schema(tmp_path: Path) -> None:
    """CONTRACT §4.1: the Go params / results / content parts are generated from the op models
    (``aimux_ops/ops``): a field added there is in ``zz_types.go`` after ``--write``, optional
    (an ``Opt``), and ``--check`` reports the drift before."""
    generated = generate(REPO)
    root = tmp_path / "repo"
    shutil.copytree(
        REPO / "aimux_ops", root / "aimux_ops", ignore=shutil.ignore_patterns("__pycache__")
    )
    for rel in [*generated, *INPUTS]:
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        shutil.copy2(REPO / rel, root / rel)
    models = root / "aimux_ops" / "ops" / "models.py"
    text = models.read_text(encoding="utf-8")
    text = text.replace(
        "class CallParams(_Model):\n    model: ModelSpec\n",
        "class CallParams(_Model):\n    model: ModelSpec\n    user_tag: str | None = None\n",
    )
    text = text.replace(
        'class TextContent(_Model):\n    type: Literal["text"]\n    text: str\n',
        'class TextContent(_Model):\n    type: Literal["text"]\n    text: str\n'
        '    lang: Literal["en", "fr"] = "en"\n',
    )
    models.write_text(text, encoding="utf-8")
    check = _codegen(root, "--check")
    assert check.returncode == 1 and "bindings/go/aimux/zz_types.go" in check.stderr
    assert _codegen(root, "--write").returncode == 0
    go = (root / "bindings/go/aimux/zz_types.go").read_text(encoding="utf-8")
    for params in ("GenerateTextParams", "StreamTextParams", "GenerateObjectParams"):
        body = go.split(f"type {params} struct {{", 1)[1].split("\n}", 1)[0]
        assert "UserTag " in body and '`json:"userTag,omitzero"`' in body, body
    part = go.split("type TextContent struct {", 1)[1].split("\n}", 1)[0]
    assert "Lang " in part and "Opt[TextContentLang]" in part, part
    assert 'TextContentLangFr TextContentLang = "fr"' in go


def test_java_classes_of_one_model_family_share_its_fields_once() -> None:
    """The Java types mirror the models' inheritance: ``ToolCallEvent(ToolCall)`` and the params
    made of ``CallParams`` extend one sealed abstract class that holds the fields they read and
    set alike; none of them repeats one of those accessors."""
    import re

    from aimux_ops.codegen.java_types import OUT

    files = generate(REPO)
    java = {
        Path(rel).stem: text.decode() for rel, text in files.items() if rel.startswith(OUT + "/")
    }
    families = {
        "CallParams": ["GenerateObjectParams", "GenerateTextParams", "StreamTextParams"],
        "AbstractToolCall": ["ToolCall", "ToolCallEvent", "ToolCallOutput"],
        "AbstractSource": ["Source", "SourceEvent"],
        "AbstractToolResultPart": ["ToolResultEvent", "ToolResultOutput", "ToolResultPart"],
        "AbstractToolErrorPart": ["ToolErrorEvent", "ToolErrorOutput", "ToolErrorPart"],
    }
    for base, members in families.items():
        text = java[base]
        assert f"public abstract sealed class {base} extends JsonObject" in text
        assert re.sub(r"\s+", " ", text.split("permits", 1)[1].split("{", 1)[0]).strip() == (
            ", ".join(members)
        )
        shared = set(re.findall(r"\n    public [^(\n]+ (\w+)\(\) \{", text))
        assert shared, base
        for member in members:
            own = java[member]
            assert f"public final class {member} extends {base}" in own
            assert f"Builder extends {base}.Builder<Builder>" in own
            assert not shared & set(re.findall(r"\n    public [^(\n]+ (\w+)\(\) \{", own)), member
    assert {"prompt", "model", "tools"} <= set(
        re.findall(r"\n    public [^(\n]+ (\w+)\(\) \{", java["CallParams"])
    )
