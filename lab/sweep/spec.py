"""What a sweep runs: a base scenario, one or more axes, and seeds, expanded into points.

A point is one scenario spec (the grammar of lab/spec_grammar.py) that reproduces it on its own::

    base  "32p512o192_mml=128k_cg=piecewise"       a spec, or a preset name, or a template:
          "{n}p{prompt}o192_mml=128k"              placeholders {name} are filled by the axes
    axis  mml=8k,32k,128k                          a list
          n=8:64:8                                 a range start:stop:step (stop included when on the grid)
          mml=4k:128k:*2                           a geometric range (each value times 2)
          cg=full,piecewise                        words, for the settings that take words
    seeds 3 (seeds 0, 1, 2) or 0,5,9               the scenario's seed (acceptance of drafts)

An axis name is a placeholder of the template, a grammar key (``mml bs k state cg capture seqs
tokens blocks accept seed steps``) or the Scenario field it stands for (``max_model_len`` ...). A
grammar key that is already in the spec is replaced, otherwise appended. Everything is checked
when the sweep is expanded, so a bad value fails before any point runs.
"""

from __future__ import annotations

import hashlib
import itertools
import json
import math
import re
import string
from dataclasses import dataclass, field

from lab.presets import PRESETS
from lab.scenario import Scenario, parse_spec
from lab.spec_grammar import SPEC_SETTINGS

MAX_POINTS = 1_000_000
MAX_AXIS_VALUES = 100_000
_FIELD_TO_KEY = {v: k for k, v in SPEC_SETTINGS.items()}
_NUM_RE = re.compile(r"^(-?\d+(?:\.\d+)?)(k?)$")


def _num(text: str, what: str):
    m = _NUM_RE.match(text.strip())
    if not m:
        raise ValueError(f"{what}: {text!r} is not a number (e.g. 16, 0.5 or 32k)")
    v = float(m.group(1)) * (1024 if m.group(2) else 1)
    return int(v) if v == int(v) and "." not in m.group(1) else v


def _fmt(v) -> str:
    if isinstance(v, float):
        return repr(v)
    return str(v)


def _short(v) -> str:
    """A value as an axis would write it (32768 -> 32k)."""
    if isinstance(v, int) and v >= 1024 and v % 1024 == 0:
        return f"{v // 1024}k"
    return _fmt(v)


def parse_values(text: str, name: str = "axis") -> list:
    """Values of one axis: ``a,b,c``, ``start:stop:step``, ``start:stop:*factor``, or words."""
    text = text.strip()
    if not text:
        raise ValueError(f"axis {name!r}: no values")
    out: list = []
    for part in text.split(","):
        part = part.strip()
        if ":" in part:
            bits = part.split(":")
            if len(bits) != 3:
                raise ValueError(f"axis {name!r}: a range is start:stop:step or start:stop:*factor, got {part!r}")
            start, stop = _num(bits[0], f"axis {name!r}"), _num(bits[1], f"axis {name!r}")
            geometric = bits[2].startswith("*")
            step = _num(bits[2][1:] if geometric else bits[2], f"axis {name!r}")
            if geometric and step <= 1 or not geometric and step <= 0:
                raise ValueError(f"axis {name!r}: the step of {part!r} must be > 0 (a factor > 1)")
            if start > stop:
                raise ValueError(f"axis {name!r}: start {start} is past stop {stop} in {part!r}")
            if geometric and start <= 0:
                raise ValueError(f"axis {name!r}: a geometric range starts above 0, got {part!r}")
            # counted before any value is made: -1:1:*2 once built 100,000 ever larger integers (80 s, 2.5 GB)
            count = math.floor(math.log(stop / start, step) + 1e-9) + 1 if geometric else (stop - start) // step + 1
            if len(out) + count > MAX_AXIS_VALUES:
                raise ValueError(f"axis {name!r}: {part!r} has more than {MAX_AXIS_VALUES:,} values")
            # decimals of the values as written, so 0.1:0.9:0.2 gives 0.3, not 0.30000000000000004
            places = max(len(b.split(".")[1]) if "." in b else 0 for b in (bits[0], bits[1], bits[2].lstrip("*")))
            v, i = start, 0
            while v <= stop + 1e-12 * abs(stop):
                out.append(v)
                if len(out) > MAX_AXIS_VALUES:  # rounding's last value
                    raise ValueError(f"axis {name!r}: {part!r} has more than {MAX_AXIS_VALUES:,} values")
                i += 1
                v = start * step**i if geometric else start + i * step
                if isinstance(v, float):
                    v = round(v, places) if places else round(v, 12)
        elif _NUM_RE.match(part):
            out.append(_num(part, f"axis {name!r}"))
        elif re.fullmatch(r"[A-Za-z0-9_/.+-]+", part):
            out.append(part)
        else:
            raise ValueError(f"axis {name!r}: {part!r} is not a value")
    return out


def parse_seeds(text) -> list[int]:
    """``3`` means seeds 0, 1, 2; ``0,5,9`` those seeds; a list of ints as given."""
    if isinstance(text, int):
        text = str(text)
    if isinstance(text, (list, tuple)):
        seeds = [int(s) for s in text]
    else:
        text = str(text).strip()
        if "," in text or ":" in text:
            seeds = [int(v) for v in parse_values(text, "seeds")]
        else:
            n = int(text)
            if not 1 <= n <= 10_000:
                raise ValueError(f"--seeds N must be between 1 and 10,000, got {n}")
            seeds = list(range(n))
    if not seeds or any(s < 0 for s in seeds) or len(set(seeds)) != len(seeds):
        raise ValueError(f"seeds must be distinct non-negative integers, got {seeds}")
    return seeds


@dataclass(frozen=True)
class Axis:
    name: str  # as given (placeholder, grammar key or Scenario field)
    values: tuple

    @classmethod
    def parse(cls, text: str) -> Axis:
        name, sep, vals = text.partition("=")
        name = name.strip()
        if not sep or not name:
            raise ValueError(f"an axis is NAME=VALUES (e.g. mml=8k,32k,128k), got {text!r}")
        return cls(name, tuple(parse_values(vals, name)))


@dataclass(frozen=True)
class Point:
    """One scenario of the sweep: the axis values, the seed, and the spec that reproduces it."""

    index: int  # position in the expansion (points before seeds)
    values: dict = field(hash=False)
    seed: int = 0
    spec: str = ""

    @property
    def key(self) -> str:
        return point_key(self.spec)


def point_key(spec: str, extra: dict | None = None) -> str:
    doc = json.dumps({"spec": spec, **(extra or {})}, sort_keys=True)
    return hashlib.sha1(doc.encode()).hexdigest()[:16]


def _placeholders(template: str) -> list[str]:
    names = []
    for _, name, spec, conversion in string.Formatter().parse(template):
        if name is not None:
            if not re.fullmatch(r"[A-Za-z_]\w*", name):
                raise ValueError(f"template placeholder {{{name}}} must be a plain name")
            if spec or conversion:  # {n:>2000000000} once allocated a 2 GB string
                raise ValueError(f"template placeholder {{{name}}} takes no format spec or conversion (!, :)")
            names.append(name)
    return names


def _set_segment(spec: str, key: str, value) -> str:
    segs = [s for s in re.split(r"[_\s]+", spec.strip()) if s and s.split("=", 1)[0].lower() != key]
    return "_".join(segs + [f"{key}={_fmt(value)}"])


@dataclass(frozen=True)
class SweepSpec:
    """A base scenario (spec, template or preset), axes and seeds. ``points()`` expands it."""

    base: str
    axes: tuple[Axis, ...] = ()
    seeds: tuple[int, ...] = (0,)

    @classmethod
    def make(cls, base: str, axes=(), seeds=1) -> SweepSpec:
        base = PRESETS[base][0] if base in PRESETS else base
        axes = tuple(a if isinstance(a, Axis) else Axis.parse(a) for a in axes)
        names = [a.name for a in axes]
        if len(set(names)) != len(names):
            raise ValueError(f"an axis is given twice: {names}")
        if any(a.name in ("seed", "seeds") for a in axes):
            raise ValueError("sweep seeds with --seeds, not as an axis")
        if any(a.name in ("point", "spec") for a in axes):
            raise ValueError("'point' and 'spec' are columns of the table, not axis names")
        spec = cls(base, axes, tuple(parse_seeds(seeds)))
        spec._check_names()
        return spec

    def _check_names(self) -> None:
        holes = _placeholders(self.base)
        names = {a.name for a in self.axes}
        missing = set(holes) - names
        if missing:
            raise ValueError(f"template placeholders without an axis: {sorted(missing)}")
        for a in self.axes:
            if a.name in holes:
                continue
            if a.name.lower() not in SPEC_SETTINGS and a.name not in _FIELD_TO_KEY:
                raise ValueError(
                    f"axis {a.name!r} is not a template placeholder, a grammar key "
                    f"({', '.join(SPEC_SETTINGS)}) or a Scenario field"
                )

    @property
    def num_points(self) -> int:
        n = len(self.seeds)
        for a in self.axes:
            n *= len(a.values)
        return n

    def scenario_for(self, values: dict, seed: int) -> Scenario:
        text = self.text_for(values, seed)
        try:
            return parse_spec(text)
        except ValueError as e:
            shown = ", ".join(f"{k}={_fmt(v)}" for k, v in values.items())
            raise ValueError(f"point {shown or '(base)'} seed={seed}: {e}") from None

    def text_for(self, values: dict, seed: int) -> str:
        """The scenario text of one point, before it is parsed (what it costs can be told from it first:
        lab.cost.spec_floor)."""
        holes = set(_placeholders(self.base))
        text = self.base.format(**{k: _fmt(v) for k, v in values.items() if k in holes}) if holes else self.base
        for name, v in values.items():
            if name in holes:
                continue
            key = name.lower() if name.lower() in SPEC_SETTINGS else _FIELD_TO_KEY[name]
            if key == "cg" and isinstance(v, str):
                v = v.lower()
            text = _set_segment(text, key, v)
        return _set_segment(text, "seed", seed)

    def points(self) -> list[Point]:
        if self.num_points > MAX_POINTS:
            raise ValueError(f"the sweep has {self.num_points:,} points; at most {MAX_POINTS:,}")
        out = []
        combos = itertools.product(*[a.values for a in self.axes])
        for i, combo in enumerate(combos):
            values = {a.name: v for a, v in zip(self.axes, combo)}
            for seed in self.seeds:
                out.append(Point(i, values, seed, self.scenario_for(values, seed).to_spec()))
        return out

    def to_dict(self) -> dict:
        return {"base": self.base, "axes": {a.name: list(a.values) for a in self.axes}, "seeds": list(self.seeds)}

    def command(self, extra: str = "") -> str:
        import shlex

        parts = ["python -m lab sweep", "--spec", shlex.quote(self.base)]
        for a in self.axes:
            parts += ["--axis", shlex.quote(f"{a.name}={','.join(_short(v) for v in a.values)}")]
        parts += [
            "--seeds",
            ",".join(str(s) for s in self.seeds)
            if self.seeds != tuple(range(len(self.seeds)))
            else str(len(self.seeds)),
        ]
        return " ".join(parts) + (f" {extra}" if extra else "")
