"""The base of every aimux error: the declaration machinery, the catalogue, source errors.

Declaring an error takes a class, a code and its payload fields::

    class NoSuchModelError(AIError, code=9):
        \"\"\"The requested model does not exist.\"\"\"

        model_id: str | None = None
        model_type: str | None = None

The annotated class attributes become the variant's payload (snake_case in Python, camelCase on
the wire) and plain attributes of every instance (``err.model_id``). The constant
(``NO_SUCH_MODEL``) and the wire name (``AI_NoSuchModelError``) follow from the class name and its
domain; ``constant=`` and ``name=`` override them. Declaring such a class registers it in the
catalogue, which the projection, the decoder, the manifest, ``schema/`` and every binding's
generated code read: one source of truth.

Cold start: declaring the classes evaluates no annotation and loads no pydantic. A class's field
types are read (``_analysis_of``) the first time it is built with fields, projected or asked for
its ``Payload``; the payload models (``_models``) load with the first ``Payload``.
"""

from __future__ import annotations

import builtins
import inspect  # (loaded already: orjson's dataclasses import it)
import math
import re
import sys
import threading
import types
import typing
from collections.abc import Callable
from typing import TYPE_CHECKING, Any, ClassVar, Generic, TypeVar

from ..guest import fork_waits_inside, on_fork_child

if TYPE_CHECKING:
    from ._models import ErrorPayload

__all__ = [
    "AimuxError",
    "ErrorPayload",
    "SourceError",
    "catalogue",
    "constant_of",
    "lookup",
]


def __getattr__(name: str) -> Any:
    """``ErrorPayload`` (a pydantic model, ``_models``), imported on its first read."""
    if name == "ErrorPayload":
        from ._models import ErrorPayload

        return ErrorPayload
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _base_model() -> type | None:
    """pydantic's ``BaseModel`` once pydantic is loaded, else None (no value is a model then)."""
    main = sys.modules.get("pydantic.main")
    return getattr(main, "BaseModel", None) if main is not None else None


@fork_waits_inside  # pydantic_core's serializer, called directly
def _dump_payload(payload: ErrorPayload) -> dict[str, Any]:
    dumped: dict[str, Any] = payload.__pydantic_serializer__.to_python(
        payload, mode="json", by_alias=True, exclude_none=True
    )
    return dumped


_BY_NAME: dict[tuple[str, str], type[AimuxError]] = {}
_BY_CODE: dict[tuple[str, int], type[AimuxError]] = {}
_ORDER: list[type[AimuxError]] = []


def _replace(prior: type[AimuxError], cls: type[AimuxError]) -> None:
    """Put ``cls`` where ``prior`` (the same class from an earlier run of its module) was.

    An import of the catalogue interrupted half-way (a host's KeyboardInterrupt during the first
    failure's lazy import) leaves the classes registered so far here while Python forgets the
    module; the import that follows runs the module again and registers the same classes anew.
    So does a fork while another thread imports it (the child imports it again), and that thread
    may have stopped half-way through ``prior``'s registration: by name, not yet by code or order.
    """
    _BY_NAME[(cls.kind, cls.error_name)] = cls
    for key, value in list(_BY_CODE.items()):
        if value is prior:
            _BY_CODE[key] = cls
    _BY_CODE.setdefault((cls.kind, cls.code), cls)
    if prior in _ORDER:
        _ORDER[_ORDER.index(prior)] = cls
    else:  # the last one registered: its place is next
        _ORDER.append(cls)


_WORDS = re.compile(r"[A-Z]+[0-9]*(?=[A-Z][a-z]|$)|[A-Z][a-z0-9]*|[a-z0-9]+")


def constant_of(stem: str) -> str:
    """``APICall`` → ``API_CALL``, ``InvalidUTF8`` → ``INVALID_UTF8``, ``LoadAPIKey`` →
    ``LOAD_API_KEY``: the UPPER_SNAKE constant of a class-name stem."""
    return "_".join(w.upper() for w in _WORDS.findall(stem))


def _payload_property(name: str) -> property:
    """A payload field as an attribute of the error: ``err.status_code`` reads and sets the
    error's field values, the same dict ``err.payload`` (the pydantic view) reads and writes:
    one state, whichever way it is used."""

    def get(self: AimuxError) -> Any:
        return self._values.get(name)

    def set_(self: AimuxError, value: Any) -> None:
        view = self.__dict__.get("_payload_view")
        if view is not None:
            setattr(view, name, value)  # the view's own bookkeeping (fields set); same dict
        else:
            self._values[name] = value

    return property(get, set_, doc=f"The payload field ``{name}`` (None when absent).")


# -- construction without pydantic on the hot path ------------------------------------------------
#
# The payload models stay the one source of truth for the schemas and the generated bindings; a
# fresh error whose field values already have their declared types (a str for ``str | None``, a
# list of str for ``list[str] | None``, ...) is built without them: each declared type gets a
# cheap check below, derived from the same annotations. Anything else (a value pydantic would
# coerce or reject, a camelCase or unknown keyword) goes through the payload model, as before.

#: A check's answer when the value needs the payload model (coercion, a validation error).
_SLOW: Any = object()

Check = Callable[[Any], Any]


def _as_is(value: Any) -> Any:
    return value


def _is_str(value: Any) -> Any:
    return value if type(value) is str else _SLOW


def _is_int(value: Any) -> Any:
    return value if type(value) is int else _SLOW


def _is_bool(value: Any) -> Any:
    return value if type(value) is bool else _SLOW


def _list_of(item: Check | None) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not list:
            return _SLOW
        if item is _as_is:
            return list(value)  # pydantic hands over a copy of a validated list
        if item is _is_str:
            for v in value:
                if type(v) is not str:
                    return _SLOW
            return list(value)
        return _SLOW

    return check


def _list_of_models(model: type) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not list:
            return _SLOW
        for v in value:
            if type(v) is not model:  # an instance is kept as it is (never revalidated)
                return _SLOW
        return list(value)

    return check


def _dict_of(values: Check) -> Check:
    def check(value: Any) -> Any:
        if type(value) is not dict:
            return _SLOW
        for k, v in value.items():
            if type(k) is not str or (values is _is_str and type(v) is not str):
                return _SLOW
        return dict(value)

    return check


def _literal(options: tuple[Any, ...]) -> Check:
    allowed = frozenset(o for o in options if type(o) is str)

    def check(value: Any) -> Any:
        return value if type(value) is str and value in allowed else _SLOW

    return check


def _unless_none(hint: Any) -> Any:
    """``T`` for a field declared ``T | None``, the hint itself when it is no union, None for
    any other union."""
    if typing.get_origin(hint) in (typing.Union, types.UnionType):
        args = typing.get_args(hint)
        rest = [a for a in args if a is not type(None)]
        return rest[0] if len(args) == 2 and len(rest) == 1 else None
    return hint


def _exact_of(hint: Any) -> type | None:
    """``str`` / ``int`` / ``bool`` when the field is declared that type (or that or None): a
    value of exactly that type is stored as it is (what its check would answer)."""
    hint = _unless_none(hint)
    return hint if hint in (str, int, bool) else None


def _is_str_list(hint: Any) -> bool:
    """Whether the field is declared ``list[str]`` (or that or None): its check is
    ``_list_of(_is_str)`` (optional), which ``AimuxError.__init__`` runs inline."""
    hint = _unless_none(hint)
    return typing.get_origin(hint) is list and typing.get_args(hint) == (str,)


def _check_of(hint: Any) -> Check | None:
    """The cheap check of a declared type, or None (every value goes through the model)."""
    if hint is Any:
        return _as_is
    origin = typing.get_origin(hint)
    args = typing.get_args(hint)
    if origin is typing.Union or origin is types.UnionType:
        rest = [a for a in args if a is not type(None)]
        if len(rest) != 1 or len(args) != 2:
            return None
        inner = _check_of(rest[0])
        if inner is None:
            return None
        if inner is _as_is:
            return _as_is

        def optional(value: Any, inner: Check = inner) -> Any:
            return None if value is None else inner(value)

        return optional
    if hint is str:
        return _is_str
    if hint is bool:
        return _is_bool
    if hint is int:
        return _is_int
    if origin is typing.Literal:
        return _literal(args) if all(type(a) is str for a in args) else None
    if origin is list and len(args) == 1:
        (item,) = args
        if item is Any or item is str:
            return _list_of(_check_of(item))
        base = _base_model()
        if isinstance(item, type) and base is not None and issubclass(item, base):
            return _list_of_models(item)
        return None
    if origin is dict and len(args) == 2 and args[0] is str and args[1] in (str, Any):
        return _dict_of(_check_of(args[1]) or _as_is)
    return None


_CLASSVAR = re.compile(r"\s*(typing\.)?ClassVar\b")


def _is_classvar(annotation: Any) -> bool:
    if isinstance(annotation, str):  # not evaluated (``from __future__ import annotations``)
        return _CLASSVAR.match(annotation) is not None
    return annotation is ClassVar or typing.get_origin(annotation) is ClassVar


def _own_fields(cls: type) -> dict[str, Any]:
    """The payload fields a class declares itself (annotated, non-ClassVar class attributes)
    and their defaults, read without evaluating the annotations."""
    own = inspect.get_annotations(cls)
    return {
        name: cls.__dict__.get(name, None)
        for name, annotation in own.items()
        if not name.startswith("_") and not _is_classvar(annotation)
    }


class _Analysis:
    """What a class's field types decide, worked out once per class (``_analysis_of``)."""

    __slots__ = ("checks", "exact", "hints", "str_lists", "wire")

    def __init__(
        self,
        checks: dict[str, Check | None],
        exact: dict[str, type],
        str_lists: frozenset[str],
        wire: tuple[tuple[str, str], ...],
        hints: dict[str, Any],
    ) -> None:
        #: per field: its cheap check (None: only the payload model validates it)
        self.checks = checks
        #: per field declared ``str`` / ``int`` / ``bool`` (or that or None): the type a value
        #: of which is stored as it is without a call (what its check would answer)
        self.exact = exact
        #: the fields declared ``list[str]`` (or that or None): a list of exactly-str items is
        #: stored as a copy without a call (what its check would answer)
        self.str_lists = str_lists
        #: (field, wire name) in the payload model's order
        self.wire = wire
        #: the class's own fields' evaluated types (its ``Payload``)
        self.hints = hints


def _analysis_of(cls: type) -> _Analysis:
    """The class's ``_Analysis`` (its annotations evaluated on the first call)."""
    got: _Analysis | None = cls.__dict__.get("_analysis")
    return got if got is not None else _analyse(cls)


def _analyse(cls: type) -> _Analysis:
    parent = next((c for c in cls.__mro__[1:] if issubclass(c, AimuxError)), None)
    inherited = _analysis_of(parent) if parent is not None else None
    own: dict[str, Any] = cls.__dict__.get("_own_defaults", {})
    hints: dict[str, Any] = {}
    if own:
        module = sys.modules.get(cls.__module__)
        for lazy in getattr(module, "LAZY_NAMES", ()):
            getattr(module, lazy)  # bound in the module's globals, which the annotations read
        annotations = inspect.get_annotations(cls)
        # the class's own annotations only, evaluated as get_type_hints evaluates a class's
        holder = types.SimpleNamespace(__annotations__={f: annotations[f] for f in own})
        hints = typing.get_type_hints(holder, vars(module), dict(vars(cls)), include_extras=True)
        for f, hint in hints.items():
            if _is_classvar(hint):  # pragma: no cover - a programming error
                raise TypeError(f"{cls.__name__}.{f}: a ClassVar annotation not written as one")
    checks = dict(inherited.checks) if inherited is not None else {}
    checks.update({f: _check_of(hint) for f, hint in hints.items()})
    exact = {f: t for f, t in (inherited.exact if inherited else {}).items() if f not in own}
    exact.update({f: t for f, hint in hints.items() if (t := _exact_of(hint)) is not None})
    str_lists = frozenset(
        {f for f in (inherited.str_lists if inherited else ()) if f not in own}
        | {f for f, hint in hints.items() if _is_str_list(hint)}
    )
    wire: tuple[tuple[str, str], ...] = ()
    names: tuple[str, ...] = getattr(cls, "_field_names", ())
    if names:
        from pydantic.alias_generators import to_camel

        wire = tuple((f, to_camel(f)) for f in names)
    analysis = _Analysis(checks, exact, str_lists, wire, hints)
    type.__setattr__(cls, "_analysis", analysis)
    return analysis


T = TypeVar("T")


class _Derived(Generic[T]):
    """A class attribute of ``_Analysis`` (read per class: a subclass has its own)."""

    def __init__(self, slot: str) -> None:
        self.slot = slot

    def __get__(self, obj: object, owner: type) -> T:
        value: T = getattr(_analysis_of(owner), self.slot)
        return value


_payload_lock = threading.RLock()


@on_fork_child
def _fresh_payload_lock() -> None:
    """In a forked child: a fresh lock (another thread may have held this one, building a
    payload model, at the fork: the child's first payload read would wait on it forever)."""
    global _payload_lock
    _payload_lock = threading.RLock()


class _LazyPayload:
    """An error class's ``Payload`` model, created (``create_model`` over the parent's
    ``Payload``; the root's is ``ErrorPayload``) the first time the class attribute is read,
    then put in its place."""

    def __init__(self, cls: type, defaults: dict[str, Any]) -> None:
        self.cls = cls
        self.defaults = defaults

    def __get__(self, obj: object, owner: type | None = None) -> type[ErrorPayload]:
        with _payload_lock:
            built: Any = self.cls.__dict__.get("Payload")
            if isinstance(built, type):
                return built
            model: Any
            if self.cls is AimuxError:
                from ._models import ErrorPayload

                model = ErrorPayload
            else:
                from pydantic import create_model

                hints = _analysis_of(self.cls).hints
                fields = {f: (hints[f], default) for f, default in self.defaults.items()}
                base: Any = getattr(super(self.cls, self.cls), "Payload")  # noqa: B009
                model = create_model(  # type: ignore[call-overload]
                    f"{self.cls.__name__}Payload", __base__=base, **fields
                )
            type.__setattr__(self.cls, "Payload", model)
            return typing.cast("type[ErrorPayload]", model)


class AimuxError(Exception):
    """Root of every error that crosses the aimux boundary, in all four domains.

    Payload fields are attributes (``err.status_code``); ``err.payload`` is the same data as a
    pydantic model (kept for compatibility; camelCase aliases on the wire)."""

    kind: str = "aimux"
    code: int = 1
    error_name: str = "AimuxError"
    constant: ClassVar[str] = ""
    description: ClassVar[str] = ""
    #: the payload model (pydantic), created on its first read (``_LazyPayload``)
    Payload: ClassVar[type[ErrorPayload]]
    #: Prefix of the wire name in this domain (the aimux domain: ``AI_``).
    name_prefix: ClassVar[str] = ""
    #: Class-name prefix left out of the constant (recording: ``Recording``).
    constant_prefix: ClassVar[str] = ""
    _field_names: ClassVar[tuple[str, ...]] = ()
    #: Per field its default; the fields this class declares itself, with theirs.
    _defaults: ClassVar[dict[str, Any]] = {}
    _own_defaults: ClassVar[dict[str, Any]] = {}
    #: Derived from the annotations on first use (``_Analysis``): per field its cheap check, the
    #: fields stored as they are, the ``list[str]`` fields, (field, wire name) in order.
    _checks = _Derived[dict[str, "Check | None"]]("checks")
    _exact = _Derived[dict[str, type]]("exact")
    _str_lists = _Derived[frozenset[str]]("str_lists")
    _wire = _Derived[tuple[tuple[str, str], ...]]("wire")
    #: The field values (the dict ``payload``'s model view shares) and the members a newer core
    #: sent that this version does not declare (None: none).
    _values: dict[str, Any]
    _extra: dict[str, Any] | None = None
    #: The node this error was decoded from, when it came from JSON (else None).
    raw: dict[str, Any] | None = None
    #: A decoded root's own ``(retryable, retryAfterMs)`` as the envelope gave them (else None).
    wire_root: tuple[bool, int | None] | None = None

    def __init_subclass__(
        cls,
        *,
        code: int | None = None,
        constant: str | None = None,
        name: str | None = None,
        **kwargs: Any,
    ) -> None:
        super().__init_subclass__(**kwargs)
        fields = _own_fields(cls)
        for field in fields:  # read and written through the payload: one state
            setattr(cls, field, _payload_property(field))
        cls._own_defaults = fields
        if fields:
            # built on first use (cold start: no pydantic model per error class at import)
            cls.Payload = _LazyPayload(cls, fields)  # type: ignore[assignment]
        inherited = cls._field_names  # the nearest ancestor's (pydantic's order: theirs, then new)
        cls._field_names = inherited + tuple(f for f in fields if f not in inherited)
        cls._defaults = {**cls._defaults, **fields}
        for hook in ("retryable", "retry_after_ms"):
            if hook in cls.__dict__:  # pragma: no cover - a programming error caught at import
                raise TypeError(
                    f"{cls.__name__} overrides {hook}: override _own_{hook} instead (a decoded "
                    "root reports the envelope's own value, CONTRACT §4)"
                )
        if code is None:
            return
        stem = cls.__name__.removesuffix("Error")
        cls.code = code
        cls.constant = constant or constant_of(stem.removeprefix(cls.constant_prefix))
        cls.error_name = name or f"{cls.name_prefix}{cls.__name__}"
        if not cls.__dict__.get("description"):
            cls.description = (cls.__doc__ or "").strip().splitlines()[0] if cls.__doc__ else ""
        key = (cls.kind, cls.error_name)
        prior = _BY_NAME.get(key)
        if prior is not None:
            if (prior.__module__, prior.__qualname__) != (cls.__module__, cls.__qualname__):
                raise TypeError(f"duplicate error name {key}")  # a programming error
            _replace(prior, cls)  # its module runs again after an interrupted import
            return
        _BY_NAME[key] = cls
        _BY_CODE.setdefault((cls.kind, cls.code), cls)
        _ORDER.append(cls)

    def __init__(
        self, message: str | None = None, /, *, payload: ErrorPayload | None = None, **fields: Any
    ) -> None:
        """``fields`` are the payload fields (snake_case or camelCase), validated; ``payload``
        is an already-built payload (the decoder's path: what the wire carried, kept even when
        it does not validate)."""
        if payload is not None:
            self.payload = payload
        elif not fields:
            self._values = self._defaults.copy()
        else:
            values = self._defaults.copy()
            cls = type(self)
            analysis = cls.__dict__.get("_analysis") or _analyse(cls)
            exact = analysis.exact
            for key, value in fields.items():
                kind = type(value)
                if kind is exact.get(key):
                    values[key] = value
                    continue
                if kind is list and key in analysis.str_lists:
                    for item in value:  # what its check does, without two calls
                        if type(item) is not str:
                            break
                    else:
                        values[key] = list(value)
                        continue
                check = analysis.checks.get(key)
                got = _SLOW if check is None else check(value)
                if got is _SLOW:  # coercion, a camelCase or unknown name, or a validation error
                    self.payload = self.Payload(**fields)
                    break
                values[key] = got
            else:
                self._values = values
        if message is None:
            message = self.default_message()
        self.message: str = message
        BaseException.__init__(self, message)

    def __getattr__(self, name: str) -> Any:
        # Members a newer core sent that this version does not declare (kept when decoding).
        extras = self.__dict__.get("_extra")
        if extras and name in extras:
            return extras[name]
        raise AttributeError(f"{type(self).__name__!r} object has no attribute {name!r}")

    @property
    def payload(self) -> ErrorPayload:
        """The payload as its pydantic model (kept for compatibility; camelCase aliases on the
        wire): a view over the same field values as the attributes, built on first use."""
        view: ErrorPayload | None = self.__dict__.get("_payload_view")
        if view is None:
            model = type(self).Payload
            view = model.model_construct(
                _fields_set={k for k, v in self._values.items() if v is not None}
            )
            if self._extra is None:
                self._extra = {}
            object.__setattr__(view, "__dict__", self._values)
            object.__setattr__(view, "__pydantic_extra__", self._extra)
            self._payload_view = view
        return view

    @payload.setter
    def payload(self, model: ErrorPayload) -> None:
        """Adopt a built payload (the decoder's path): its values become the error's."""
        self._values = model.__dict__
        extra = model.__pydantic_extra__
        if extra is None:
            extra = {}
            object.__setattr__(model, "__pydantic_extra__", extra)
        self._extra = extra
        self._payload_view = model

    @classmethod
    def wire_payload(cls, members: dict[str, Any]) -> ErrorPayload:
        """The payload of a decoded node: validated, or (a newer or foreign core's shape) kept
        as sent."""
        try:
            return cls.Payload.model_validate(members)
        except ValueError:
            return cls.Payload.model_construct(**members)

    def default_message(self) -> str:
        return self.description or self.error_name

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        shown = ", ".join(
            f"{f}={getattr(self, f)!r}" for f in self._field_names if getattr(self, f) is not None
        )
        return f"{type(self).__name__}({self.message!r}{', ' if shown else ''}{shown})"

    @property
    def status_code(self) -> int | None:
        """The HTTP status of what failed, on whatever error was caught: a variant's own
        ``statusCode`` field (``APICallError``, ``TimeoutError``, ``RetryError``: its last
        attempt's) overrides this; any other error gives the ``statusCode`` its envelope node
        carries, else None."""
        extras = self.__dict__.get("_extra")
        own = extras.get("statusCode") if extras else None
        return own if isinstance(own, int) and not isinstance(own, bool) else None

    # -- projection hooks -------------------------------------------------------------------
    @property
    def retryable(self) -> bool:
        """Whether retrying the same call could succeed. A decoded root reports its envelope's
        ``retryable`` as given (CONTRACT §4), never recomputed from the payload."""
        wire = self.wire_root
        return wire[0] if wire is not None else self._own_retryable()

    @property
    def retry_after_ms(self) -> int | None:
        """The server's retry hint in milliseconds, only when one was observed. A decoded root
        reports its envelope's ``retryAfterMs`` as given (CONTRACT §4)."""
        wire = self.wire_root
        return wire[1] if wire is not None else self._own_retry_after_ms()

    # Subclasses override these two (never ``retryable`` / ``retry_after_ms`` themselves).
    def _own_retryable(self) -> bool:
        return False

    def _own_retry_after_ms(self) -> int | None:
        return None

    def payload_fields(self) -> dict[str, Any]:
        """The payload as JSON-ready camelCase members (absent fields omitted): what the payload
        model's serializer gives (``model_dump(mode="json", by_alias=True, exclude_none=True)``).
        When every value is already plain JSON (str, int, bool, finite float, lists and
        str-keyed dicts of those) and no undeclared member is kept, the members are read
        directly; otherwise the serializer runs (conversions, warnings, errors as before)."""
        if not self._extra:
            values = self._values
            out: dict[str, Any] = {}
            for name, wire in self._wire:
                value = values.get(name)
                if value is None:
                    continue
                kind = type(value)
                if kind is str or kind is bool or kind is int or _plain(value, 0):
                    out[wire] = value
                elif kind is list and (models := dump_models(value)) is not None:
                    out[wire] = models
                else:
                    break
            else:
                return out
        return _dump_payload(self.payload)

    def cause_children(self) -> list[BaseException]:
        """Nested errors carried inside the payload (RetryError's attempts)."""
        return []

    def native_next(self) -> BaseException | None:
        """The next link of the native chain (``__cause__``; RetryError: the last attempt)."""
        return self.__cause__

    @classmethod
    def is_instance(cls, value: object) -> bool:
        """Marker-based check, like the AI SDK's ``isInstance``: matches by (kind, name)
        so that an error from a second copy of the package is recognised too."""
        return (
            getattr(value, "kind", None) == cls.kind
            and getattr(value, "error_name", None) == cls.error_name
        ) or isinstance(value, cls)


def _plain(value: Any, depth: int) -> bool:
    """Whether ``value`` is JSON the payload serializer would hand back unchanged."""
    kind = type(value)
    if kind is str or kind is int or kind is bool or value is None:
        return True
    if kind is float:
        return math.isfinite(value)  # the serializer writes NaN and infinities as null
    if depth > 32:
        return False
    if kind is list:
        for v in value:
            kind = type(v)
            if not (
                kind is str or kind is int or kind is bool or v is None or _plain(v, depth + 1)
            ):
                return False
        return True
    if kind is dict:
        for k, v in value.items():
            if type(k) is not str:
                return False
            kind = type(v)
            if not (
                kind is str or kind is int or kind is bool or v is None or _plain(v, depth + 1)
            ):
                return False
        return True
    return False


#: Per pydantic model class: its field names when the serializer's JSON of an instance is
#: simply its str / int / bool members (no alias, no custom serializer, no extra members kept),
#: else None. Worked out from the class once (a property of the model, not of any value).
_SIMPLE_MODELS: dict[type, tuple[str, ...] | None] = {}


def _simple_fields(model: type) -> tuple[str, ...] | None:
    held = _SIMPLE_MODELS.get(model, ())
    if held != ():
        return held
    fields: tuple[str, ...] | None = None
    try:
        config = model.model_config  # type: ignore[attr-defined]
        decorators = model.__pydantic_decorators__  # type: ignore[attr-defined]
        infos = model.model_fields  # type: ignore[attr-defined]
        if (
            config.get("alias_generator") is None
            and config.get("extra") != "allow"
            and not getattr(model, "__pydantic_root_model__", False)
            and not decorators.field_serializers
            and not decorators.model_serializers
            and not decorators.computed_fields
            and all(
                info.alias is None
                and info.serialization_alias is None
                and not info.exclude
                and info.annotation in (str, int, bool)
                for info in infos.values()
            )
        ):
            fields = tuple(infos)
    except Exception:  # noqa: BLE001 - not a model this rule knows: the serializer's
        fields = None
    _SIMPLE_MODELS[model] = fields
    return fields


def dump_models(value: list[Any]) -> list[dict[str, Any]] | None:
    """A list of pydantic model instances as the payload serializer dumps it (JSON mode, no
    ``None`` member), when every instance is of a simple model (``_simple_fields``) whose
    values have their declared types; else None (the serializer is needed)."""
    base = _base_model()
    if base is None:  # pydantic not loaded: no item is a model
        return None
    out: list[dict[str, Any]] = []
    for item in value:
        model = type(item)
        if not isinstance(item, base):
            return None
        names = _simple_fields(model)
        if names is None:
            return None
        members = item.__dict__
        dumped: dict[str, Any] = {}
        for name in names:
            v = members.get(name)
            if v is None:
                continue
            kind = type(v)
            if kind is not str and kind is not int and kind is not bool:
                return None
            dumped[name] = v
        out.append(dumped)
    return out


class SourceError(Exception):
    """A decoded snapshot of an external exception (socket, decoder, file system, …).

    A decoded node's class is ``SourceError.named(type)``: a subclass named as the original
    (``ConnectionRefusedError``; ``java.io.IOException`` is ``IOException`` of module
    ``java.io``), so a traceback prints the original type name. Where the name is a Python
    builtin exception, the class is also that builtin's subclass: ``except
    ConnectionRefusedError`` / ``isinstance`` match the snapshot as they would the original.
    ``isinstance(e, SourceError)`` matches every snapshot; ``e.type`` is the name as sent."""

    def __init__(self, message: str, type: str | None = None) -> None:  # noqa: A002
        super().__init__(message)
        self.message = message
        self.type = type
        self.raw: dict[str, Any] | None = None

    def __str__(self) -> str:
        return self.message

    def __repr__(self) -> str:
        return f"SourceError({self.message!r}, type={self.type!r})"

    def __reduce__(self) -> tuple[Any, ...]:
        # a named class is found again by its type name, not by module and name (pickle, copy)
        return (_source_error, (self.message, self.type), self.__dict__)

    @staticmethod
    def named(type_name: str | None) -> type[SourceError]:
        """The class of a snapshot of ``type_name`` (the same class on every call: ``except
        SourceError.named("java.io.IOException")`` matches); ``SourceError`` itself for no
        name, or once ``_SOURCE_CLASSES_MAX`` names were made (the wire is untrusted)."""
        if not type_name:
            return SourceError
        cls = _source_classes.get(type_name)
        if cls is not None:
            return cls
        if len(_source_classes) >= _SOURCE_CLASSES_MAX or len(type_name) > 200:
            return SourceError
        return _source_classes.setdefault(type_name, _source_class(type_name))


def _source_error(message: str, type_name: str | None) -> SourceError:
    return SourceError.named(type_name)(message, type_name)


#: the snapshot classes made so far, by type name (``SourceError.named``), and their bound
_source_classes: dict[str, type[SourceError]] = {}
_SOURCE_CLASSES_MAX = 512
#: builtins a snapshot never derives from: raising or catching one means control flow
_NOT_MIXED = frozenset({"StopIteration", "StopAsyncIteration"})


def _source_class(type_name: str) -> type[SourceError]:
    module, _, name = type_name.rpartition(".")
    name = name or type_name
    builtin = getattr(builtins, name, None)
    bases: tuple[type, ...] = (SourceError,)
    if (
        not module
        and isinstance(builtin, type)
        and issubclass(builtin, Exception)
        and name not in _NOT_MIXED
    ):
        bases = (SourceError, builtin)
    namespace = {"__module__": module or "builtins", "__qualname__": name, "__doc__": None}
    for candidate in (bases, (SourceError,)):
        try:
            cls = types.new_class(name, candidate, exec_body=lambda ns: ns.update(namespace))
            cls("probe", type_name)  # a builtin whose constructor takes other arguments: not mixed
            return typing.cast("type[SourceError]", cls)
        except Exception:  # noqa: BLE001 - the plain subclass below always works
            continue
    raise AssertionError("unreachable")  # pragma: no cover


def catalogue() -> list[type[AimuxError]]:
    """Every catalogued error class, in declaration order."""
    return list(_ORDER)


def lookup(kind: str, name: str | None, code: int | None) -> type[AimuxError] | None:
    """The class for a wire node: by (kind, name) first, then by (kind, code)."""
    if name is not None:
        cls = _BY_NAME.get((kind, name))
        if cls is not None:
            return cls
    if code is not None:
        return _BY_CODE.get((kind, code))
    return None


AimuxError.Payload = _LazyPayload(AimuxError, {})  # type: ignore[assignment]
