"""``python -m lab claims``: every claim the lab makes about vLLM 0.33.0's source (lab/real_vllm/claims/rules.py
``all_claims``: the backend records, the rules, the other consumers of max_seq_len) checked against the
installed wheel (lab/real_vllm/claims/check.py). Outside .venv-vllm it runs itself there.

    python -m lab claims [--where TEXT] [--quiet]
"""

from __future__ import annotations

import sys


def register(sub) -> None:
    sp = sub.add_parser("claims", help="check every claim the lab makes about vLLM 0.33.0's source (in .venv-vllm)")
    sp.add_argument("--where", help="only the claims whose place contains this text (e.g. 'backend fa3', 'rule R6')")
    sp.add_argument("--quiet", action="store_true", help="print only the claims that fail, and the count")
    sp.set_defaults(fn=cmd_claims)


def cmd_claims(args, out=None) -> int:
    from lab.real_vllm.kernels import env

    if not env.in_vllm_env():
        argv = ["claims", *(["--where", args.where] if args.where else []), *(["--quiet"] if args.quiet else [])]
        print(f"vLLM {env.VLLM_VERSION} is not installed here: running in {env.vllm_python()}", file=out or sys.stdout)
        return env.run_in_vllm_env(argv)
    from lab.real_vllm.claims.check import ClaimFailed, check
    from lab.real_vllm.claims.rules import all_claims

    w = (out or sys.stdout).write
    claims = [(where, c) for where, c in all_claims() if not args.where or args.where in where]
    if not claims:
        raise ValueError(f"no claim is made in a place containing {args.where!r}")
    failed = 0
    for where, claim in claims:
        try:
            check(claim)
        except ClaimFailed as e:
            failed += 1
            w(f"FAILS  {where}: {e}\n")
            continue
        if not args.quiet:
            w(f"holds  {where}: {claim.symbol}\n")
    w(f"{len(claims) - failed} of {len(claims)} claims hold in vLLM {env.VLLM_VERSION}'s installed source\n")
    return 1 if failed else 0
