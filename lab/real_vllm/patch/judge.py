"""The lab's verdict on a patch: vLLM 0.33.0's values on a scenario with the patch against without it
(lab/real_vllm/patch/harness.py ``run``, once each), in words. Pure: no vLLM here.

Said in this order:

1. **Correctness bugs** (``bug``): a draft pass told a ``max_seq_len`` below what a request in it needs
   (the longest ``seq_lens`` vLLM hands that pass's kernel). A kernel that sizes its work from the told
   value would skip KV the request has: wrong tokens, not a slower step.
2. **Capture** (``capture``, R3): a FULL graph replays the value frozen when it was captured, so capture
   must stay sized with ``max_model_len`` (``prepare_inputs_to_capture``); any change there is named.
3. **Collateral change** (``collateral``): every other value of every step must equal unpatched 0.33.0's
   (the batch, the dispatch, the target's metadata, each pass's upper bounds and lengths, the tables).
4. **The rule** (R4/R5): each draft pass told at most ``min(max upper bound + K, max_model_len)`` (R4, as
   EAGLE/MTP since #43991) and at least its own ``min(max upper bound + step, max_model_len)``, ``step``
   counting the standalone draft model's correction slot (pass p: p + 1). Common mistakes are named.
5. That the lines the patch added ran (the overlay's proof).
"""

from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field

# Fields the fix is meant to change: what each draft pass is told (R4, R5). Everything else is collateral.
MAY_CHANGE = ("draft_max_seq_len",)
_PASS_FIELDS = (" max_seq_len", " kernel_max_seq_len")
_PASS_SAME = ("seq_lens", "upper_bound", "num_reqs", "num_tokens", "max_query_len", "query_start_loc")
SEVERITY = ("bug", "capture", "collateral", "mistake", "ran", "ok")
# How each finding that fails a patch begins (notebook 08 gives each a hint: lab/exercises/nb08_fix_draft_model.py).
FINDING_STARTS = (
    "CORRECTNESS BUG",
    "capture changed",
    "collateral change",
    "not fixed",
    "below the rule",
    "no clamp to max_model_len",
    "the + step forgotten",
    "the standalone draft model's extra correction slot ignored",
    "the draft's own lengths used",
    "the patch's added lines never ran",
)


@dataclass(frozen=True)
class Finding:
    kind: str  # one of SEVERITY
    text: str


@dataclass(frozen=True)
class PassCheck:
    step: int
    index: int  # the draft pass (0: the draft prefill)
    before: int  # told by unpatched 0.33.0
    told: int  # told with the patch
    need: int  # the longest length a request of the pass has
    low: int  # min(max ub + pass step, mml)
    rule: int  # min(max ub + K, mml)

    @property
    def verdict(self) -> str:
        if self.told < self.need:
            return "BUG: told less than a request needs"
        if self.told > self.rule:
            return "more than the rule"
        return "within the rule" if self.told >= self.low else "below the rule's bound (on these lengths only)"


@dataclass
class Verdict:
    findings: list[Finding] = field(default_factory=list)
    passes: list[PassCheck] = field(default_factory=list)

    @property
    def ok(self) -> bool:
        return not any(f.kind in ("bug", "capture", "collateral", "mistake") for f in self.findings)

    @property
    def kinds(self) -> set[str]:
        return {f.kind for f in self.findings}

    def add(self, kind: str, text: str) -> None:
        self.findings.append(Finding(kind, text))

    def sorted(self) -> list[Finding]:
        return sorted(self.findings, key=lambda f: SEVERITY.index(f.kind))

    def to_json(self) -> dict:
        return {
            "ok": self.ok,
            "findings": [[f.kind, f.text] for f in self.sorted()],
            "passes": [[p.step, p.index, p.before, p.told, p.need, p.low, p.rule] for p in self.passes],
        }


def _keyed(values: list) -> dict:
    seen: Counter = Counter()
    out = {}
    for step, rule, fld, value in values:
        seen[(step, rule, fld)] += 1
        out[(step, rule, fld, seen[(step, rule, fld)])] = value
    return out


def _may_change(fld: str) -> bool:
    return fld in MAY_CHANGE or (fld.startswith("draft pass ") and fld.endswith(_PASS_FIELDS))


def compare_values(verdict: Verdict, base: dict, patched: dict, max_model_len: int) -> None:
    """Capture (R3) and collateral change: every value of the two runs, key by key."""
    b, p = _keyed(base["values"]), _keyed(patched["values"])
    capture, other, told = [], [], 0
    for key in sorted(set(b) | set(p), key=lambda k: (str(k[0]), k[1:])):
        if b.get(key, "absent") == p.get(key, "absent"):
            continue
        if _may_change(key[2]):
            told += key[2].endswith(" max_seq_len") and not key[2].endswith("kernel_max_seq_len")
            continue
        where = f"step {key[0]} {key[1]} {key[2]}: {b.get(key, 'absent')!r} -> {p.get(key, 'absent')!r}"
        (capture if key[1] == "R3" else other).append(where)
    probe = p.get(("config", "R3", "capture max_seq_len (probe)", 1))
    if capture or probe != max_model_len:
        verdict.add(
            "capture",
            f"capture changed (R3): a FULL graph replays the max_seq_len frozen at capture, which must stay "
            f"max_model_len = {max_model_len}; the patch changed {len(capture)} value(s), e.g. "
            f"{capture[0] if capture else f'the capture probe: {probe}'}",
        )
    for bp, pp in zip(base["passes"], patched["passes"]):
        other += [
            f"step {bp['step']} draft pass {bp['pass']} {k}: {bp[k]!r} -> {pp[k]!r}"
            for k in _PASS_SAME
            if bp[k] != pp[k]
        ]
    if len(base["passes"]) != len(patched["passes"]):
        other.append(f"draft passes run: {len(base['passes'])} -> {len(patched['passes'])}")
    verdict.add("ok", f"the patch changed what {told:,} draft pass(es) are told (R5 max_seq_len, all steps)")
    if other:
        verdict.add(
            "collateral",
            f"collateral change: {len(other)} value(s) other than what a draft pass is told differ from "
            f"unpatched vLLM 0.33.0, first: {other[0]}",
        )
    else:
        verdict.add("ok", f"no collateral change: every other value of {len(b):,} equals unpatched vLLM 0.33.0's")


def check_passes(verdict: Verdict, base: dict, patched: dict, k: int, max_model_len: int) -> None:
    """Per draft pass: told against what it needs and the rule; correctness bugs first; the mistakes named."""
    bugs, above = [], []
    for bp, pp in zip(base["passes"], patched["passes"]):
        max_ub = pp["max_ub"]
        check = PassCheck(
            pp["step"], pp["pass"], bp["told"], pp["told"], pp["need"],
            min(max_ub + pp["pass"] + 1, max_model_len), min(max_ub + k, max_model_len),
        )  # fmt: skip
        verdict.passes.append(check)
        if check.told < check.need:
            bugs.append(check)
        elif check.told > check.rule:
            above.append(check)
    if bugs:
        b = bugs[0]
        verdict.add(
            "bug",
            f"CORRECTNESS BUG: {len(bugs)} draft pass(es) told less than a request in it needs, first step "
            f"{b.step} pass {b.index}: told {b.told}, a request there is {b.need} tokens long. A kernel sized "
            f"from max_seq_len would skip that request's last KV: wrong drafts, not a faster step.",
        )
    below = [c for c in verdict.passes if c.need <= c.told < c.low]
    if below and not _own_lengths(patched, k, max_model_len):
        b = below[0]
        verdict.add(
            "mistake",
            f"below the rule: {len(below)} draft pass(es) told less than min(max upper bound + step, max_model_len), "
            f"first step {b.step} pass {b.index}: told {b.told}, the rule gives {b.low}; enough for this run's "
            f"lengths only",
        )
    if above:
        a = above[0]
        verdict.add(
            "mistake",
            f"not fixed: {len(above)} draft pass(es) still told more than min(max upper bound + K, max_model_len), "
            f"first step {a.step} pass {a.index}: told {a.told}, the rule gives {a.rule}",
        )
    _name_mistakes(verdict, patched, k, max_model_len)
    if not bugs and not above and verdict.passes:
        verdict.add(
            "ok",
            f"every draft pass ({len(verdict.passes)}) told between what its requests need and "
            f"min(max upper bound + K, max_model_len)",
        )


def _name_mistakes(verdict: Verdict, patched: dict, k: int, mml: int) -> None:
    passes = patched["passes"]
    r4 = [v for _, rule, fld, v in patched["values"] if rule == "R4" and fld == "draft_max_seq_len"]
    if any(isinstance(v, int) and v > mml for v in r4):
        verdict.add(
            "mistake",
            f"no clamp to max_model_len: draft_max_seq_len reached {max(r4)} > max_model_len = {mml}. vLLM's "
            f"_build_attn_metadata clamps again, but R4 is min(max upper bound + K, max_model_len)",
        )
    unclamped = [p for p in passes if p["max_ub"] + k < mml]
    offsets = {p["told"] - p["max_ub"] for p in unclamped}
    if unclamped and offsets == {0}:
        verdict.add(
            "mistake",
            "the + step forgotten: every pass told the batch's max upper bound itself, but the draft writes "
            "K more tokens (and the draft prefill's correction slot) past it",
        )
    elif unclamped and k > 1 and offsets == {k - 1}:
        verdict.add(
            "mistake",
            f"the standalone draft model's extra correction slot ignored: told max upper bound + {k - 1}, but "
            f"its last pass is built with step={k} ('Include the correction token inserted during prefill')",
        )
    elif unclamped and all(p["told"] - p["max_ub"] == p["pass"] for p in unclamped):
        verdict.add(
            "mistake",
            "the standalone draft model's extra correction slot ignored: pass p told max upper bound + p "
            "(EAGLE's numbering); the standalone draft model's pass p runs at step p + 1",
        )
    if _own_lengths(patched, k, mml):
        verdict.add(
            "mistake",
            "the draft's own lengths used: told max(seq_lens) + K, the exact lengths on the GPU (a device-to-host "
            "sync every step, and no bound on what the CPU schedules); the rule reads the CPU's "
            "seq_lens_cpu_upper_bound",
        )


def _own_lengths(patched: dict, k: int, mml: int) -> bool:
    """Told max(exact lengths) + K where the exact lengths trail the upper bound (and not the rule)."""
    own = [p for p in patched["passes"] if p["max_ub"] + k < mml and max(p["target_seq_lens"]) < p["max_ub"]]
    return bool(own) and all(p["told"] == min(max(p["target_seq_lens"]) + k, mml) for p in own)


def check_proof(verdict: Verdict, proof: dict) -> None:
    ran = {path: r["ran"] for path, r in proof.items()}
    if not any(ran.values()):
        verdict.add(
            "mistake",
            "the patch's added lines never ran on this scenario (the code changed is not on the path the "
            "scenario takes): nothing was tested",
        )
        return
    for path, lines in ran.items():
        if lines:
            first, times = min(lines)
            verdict.add(
                "ran", f"the patch ran: {path} line {first} ran {times:,} time(s) ({len(lines)} added line(s) ran)"
            )


def judge(base: dict, patched: dict, scenario) -> Verdict:
    """The verdict on a patch (module docstring), from the unpatched and the patched run."""
    verdict = Verdict()
    k, mml = scenario.num_speculative_tokens, scenario.max_model_len
    check_passes(verdict, base, patched, k, mml)
    compare_values(verdict, base, patched, mml)
    check_proof(verdict, patched.get("proof", {}))
    return verdict
