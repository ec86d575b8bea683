"""A kernel's knobs: :class:`Option`, declared by kind (count, choice, switch, tile), each kind read
by one parser (:meth:`Option.value`); and the one table of renamed option spellings (RENAMED),
through which ``--opt``/``--variant`` refuse an old name and saved rows and checkpoints are read
with the new ones. compare/harness/registry.py re-exports these names."""
from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Callable, Optional

# Option kinds: each option is one of these, declared as data (its kind, bounds, closed list), and
# each kind has ONE parser (Option.value). "free" is only the old constructor's way (a ``parse``
# callable of a plugin's own), kept so third-party plugins written against it still load.
OPTION_KINDS = ("count", "choice", "switch", "tile", "free")


class OptionValueError(ValueError):
    """A kind's parser refusing a value; its message already names the option and the value."""


@dataclass(frozen=True)
class Option:
    """One knob of a kernel (tile, split count, operand mode, autotune on/off), declared with it.

    Declare it by kind: :meth:`count` (an integer in bounds), :meth:`choice` (a closed list),
    :meth:`switch` (on / off) or :meth:`tile` (a family's tile text, e.g. BMxBNxBK/warps/stages,
    with candidates for ``NAME=*``). :meth:`value` turns the user's text (``--opt name=value``)
    into the value ``prepare`` receives, or raises ``ValueError`` naming the option and what it
    takes. A kernel's heuristic chooses every option the user leaves out (``default`` says what,
    in words or as a value, for --list); whatever was used, chosen or given, is reported in the
    result row's ``config``.

    ``Option(name, help, parse)`` (a callable of your own, kind "free") still works for plugins.
    """

    name: str
    help: str
    # kind "free": the plugin's own text -> value callable; kind "tile": the tile text's decoder
    # (a family's format, e.g. BMxBNxBK/warps/stages); unused by count, choice and switch.
    parse: Optional[Callable[[str], object]] = str
    # The values a user may pick from, as text, when the option has a closed list (a CUDA stage's
    # compiled tiles, an operand mode): what ``--variant KERNEL:NAME=*`` expands to.
    choices: tuple = ()
    # Values worth trying when the option takes more than a closed list (a Triton kernel's
    # autotune configs for its free-form tile): with ``choices``, what NAME=* expands to.
    candidates: tuple = ()
    kind: str = "free"
    minimum: Optional[int] = None    # count: the least value allowed
    maximum: Optional[int] = None    # count: the largest value allowed (None: no bound)
    default: object = None           # what an unset option means (None: the kernel's heuristic)

    def __post_init__(self):
        if self.kind not in OPTION_KINDS:
            raise ValueError(f"option {self.name!r}: unknown kind {self.kind!r}; known: {', '.join(OPTION_KINDS)}")
        if self.kind == "free" and not self.choices and getattr(self.parse, "choices", None):
            # An old-style choice parser declaring its list as an attribute: read it once, here.
            object.__setattr__(self, "choices", tuple(self.parse.choices))
        if self.kind == "choice" and not self.choices:
            raise ValueError(f"option {self.name!r}: a choice needs its values")
        if self.kind in ("free", "tile") and not callable(self.parse):
            raise ValueError(f"option {self.name!r}: kind {self.kind} needs a parse callable")

    @classmethod
    def count(cls, name: str, help: str, default=None, minimum: int = 1,
              maximum: Optional[int] = None) -> "Option":
        """An integer in ``minimum..maximum`` (a split count, a grid size, an SM count)."""
        return cls(name, help, None, kind="count", minimum=minimum, maximum=maximum, default=default)

    @classmethod
    def choice(cls, name: str, help: str, values, default=None) -> "Option":
        """One of a closed list of words (an operand mode, a compiled tile's label)."""
        return cls(name, help, None, choices=tuple(values), kind="choice", default=default)

    @classmethod
    def switch(cls, name: str, help: str, default: bool = True) -> "Option":
        """on / off, as True / False."""
        return cls(name, help, None, choices=("on", "off"), kind="switch", default=default)

    @classmethod
    def tile(cls, name: str, help: str, decode: Callable[[str], object], candidates=(), default=None) -> "Option":
        """A tile the family's format describes (``decode`` reads it, raising ValueError with what
        the format is); ``candidates`` are the values worth trying (``NAME=*``)."""
        return cls(name, help, decode, candidates=tuple(candidates), kind="tile", default=default)

    def value(self, text):
        """The user's text -> the value ``prepare`` receives; ValueError names the option."""
        if self.kind == "free":
            return self.parse(text)
        t = str(text).strip()
        if self.kind == "count":
            try:
                n = int(t)
            except ValueError:
                raise self._bad(text, "must be an integer") from None
            if self.minimum is not None and n < self.minimum:
                raise self._bad(text, f"must be >= {self.minimum}")
            if self.maximum is not None and n > self.maximum:
                raise self._bad(text, f"must be <= {self.maximum}")
            return n
        if self.kind in ("choice", "switch"):
            if t not in self.choices and t.lower() in self.choices:
                t = t.lower()
            if t not in self.choices:
                raise self._bad(text, f"must be one of {', '.join(self.choices)}")
            return t == "on" if self.kind == "switch" else t
        try:
            return self.parse(text)
        except (ValueError, TypeError) as e:
            raise self._bad(text, str(e)) from None

    @property
    def placeholder(self) -> str:
        """What the option takes, as --list writes it after ``NAME=``."""
        if self.kind == "count":
            return "N" if self.maximum is None else f"{self.minimum}..{self.maximum}"
        if self.kind in ("choice", "switch") and len(self.choices) <= 4:
            return "|".join(self.choices)
        return "..."

    def _bad(self, text, why: str) -> OptionValueError:
        return OptionValueError(f"bad value {str(text)!r} for option {self.name!r}: {why}")


def declared_candidates(option: Optional[Option]) -> tuple:
    """What ``--variant KERNEL:NAME=*`` runs: the option's candidates, else its closed list."""
    if option is not None and option.candidates:
        return tuple(option.candidates)
    return declared_choices(option)


def declared_choices(option: Optional[Option]) -> tuple:
    """An option's declared closed list of values (``Option.choices``; () for none)."""
    return tuple(option.choices) if option is not None else ()


# One concept, one name across families (docs/design.md, "Option names"). "NAME": an option's old
# name. "NAME=VALUE": an old value of option NAME (its new name), for a kernel whose NAME takes the
# new value and not the old one (triton.tiled's operands=direct was stream_k's as_given; stream_k's
# own direct stays). ``--opt`` and ``--variant`` refuse an old spelling, naming the new one; saved
# rows' config keys and a checkpoint's options and variant labels are read with the new names.
RENAMED = {
    "config": "tile", "sk": "mode", "sk_grid": "grid",
    "b_operand": "b_transpose",
    "b_transpose=registers": "b_transpose=swap",
    "operands=direct": "operands=as_given",
    "operands=k_major": "operands=k_major_b",
    "mode=sk": "mode=hybrid",   # triton.stream_k: the shared model's hybrid; CUDA's sk (every tile) stays
}


def current_spelling(name: str, value: str, options) -> tuple[str, str]:
    """``(name, value)`` as a kernel declaring ``options`` spells them now (RENAMED applied)."""
    name, value = name.strip(), str(value).strip()
    if any(o.name == name for o in options):
        new_name = name                      # a kernel's own option of that name (a plugin's) stays
    else:
        new_name = RENAMED.get(name, name)
    new = RENAMED.get(f"{new_name}={value}") or RENAMED.get(f"{new_name}={value.lower()}")
    if new:
        choices = {c for o in options if o.name == new_name for c in o.choices}
        if value not in choices and value.lower() not in choices and new.partition("=")[2] in choices:
            value = new.partition("=")[2]
    return new_name, value


def renamed_message(name: str, value: str, options) -> Optional[str]:
    """"`OLD` was renamed to `NEW`" when ``name=value`` is an old spelling for a kernel declaring
    ``options``; None when it is not."""
    new_name, new_value = current_spelling(name, value, options)
    if not any(o.name == new_name for o in options):
        return None
    if new_value != str(value).strip():
        return f"`{name.strip()}={str(value).strip()}` was renamed to `{new_name}={new_value}`"
    if new_name != name.strip():
        return f"`{name.strip()}` was renamed to `{new_name}`"
    return None


def renamed_config(config: dict) -> dict:
    """A saved row's ``config`` with renamed option keys under their new names (values as recorded)."""
    out = {}
    for key, value in config.items():
        new = RENAMED.get(key, key) if "=" not in key else key
        out[new if new not in config else key] = value
    return out


_LABEL = re.compile(r"(?P<base>[^\[]+)\[(?P<items>.*)\]")


def renamed_label(label: str, options_of: Callable[[str], tuple]) -> str:
    """A variant's label ``KERNEL[NAME=VALUE,...]`` with its items spelled as now."""
    m = _LABEL.fullmatch(label)
    if not m:
        return label
    opts = options_of(m["base"])
    items = []
    for item in m["items"].split(","):
        name, eq, value = item.partition("=")
        items.append("=".join(current_spelling(name, value, opts)) if eq else item)
    return f"{m['base']}[{','.join(items)}]"


def renamed_selection(selection: dict, options_of: Callable[[str], tuple]) -> dict:
    """A checkpoint header's selection (``kernels``: names or variant labels, ``options``: --opt
    texts ``[KERNEL:]NAME=VALUE``) spelled as now; ``options_of(kernel)`` gives a kernel's
    declared options (() for one not known here)."""
    out = dict(selection)
    kernels = [renamed_label(k, options_of) for k in selection.get("kernels") or []]
    if "kernels" in selection:
        out["kernels"] = kernels
    if selection.get("options"):
        every = tuple(o for k in kernels for o in options_of(_LABEL.sub(r"\g<base>", k)))
        texts = []
        for text in selection["options"]:
            lhs, eq, value = str(text).partition("=")
            kname, colon, name = lhs.rpartition(":")
            if not eq:
                texts.append(text)
                continue
            new = current_spelling(name, value, options_of(kname) if colon else every)
            texts.append(f"{kname}{colon}{new[0]}={new[1]}")
        out["options"] = texts
    return out
