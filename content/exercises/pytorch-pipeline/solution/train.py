"""Train the pipeline from the command line; one JSON line of metrics per optimizer step.

    python train.py --config cfg.json
    python train.py --config cfg.json --steps 40 --ckpt-dir ckpt            # stop after step 40
    python train.py --config cfg.json --steps 80 --ckpt-dir ckpt --resume   # continue from ckpt
    python train.py --micro-batch 64 --accum 2 --precision fp32             # flags override the file

Each line on stdout is {"step": int, "loss": float, "lr": float, "samples_per_s": float};
anything else goes to stderr.
"""

from __future__ import annotations

import argparse
import dataclasses
import sys

import pipeline


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--config", help="JSON file of Config fields (others keep their defaults)")
    p.add_argument("--steps", type=int, help="stop when this many optimizer steps are done (default: total_steps)")
    p.add_argument("--ckpt-dir", help="where checkpoints are written (and read with --resume)")
    p.add_argument("--resume", action="store_true", help="continue from the checkpoint in --ckpt-dir, if any")
    # One flag per Config field, e.g. --micro-batch 64; given flags override the config file.
    for f in dataclasses.fields(pipeline.Config):
        p.add_argument("--" + f.name.replace("_", "-"), dest=f.name, type=type(f.default), default=None)
    return p.parse_args(argv)


def config_from(args: argparse.Namespace) -> pipeline.Config:
    cfg = pipeline.load_config(args.config) if args.config else pipeline.Config()
    overrides = {
        f.name: getattr(args, f.name) for f in dataclasses.fields(pipeline.Config) if getattr(args, f.name) is not None
    }
    return dataclasses.replace(cfg, **overrides)


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    try:
        cfg = config_from(args)
    except (ValueError, TypeError, OSError) as err:
        print(f"train.py: {err}", file=sys.stderr)
        return 2
    if args.resume and not args.ckpt_dir:
        print("train.py: --resume needs --ckpt-dir", file=sys.stderr)
        return 2
    pipeline.train(cfg, steps=args.steps, ckpt_dir=args.ckpt_dir, resume=args.resume)
    return 0


if __name__ == "__main__":
    sys.exit(main())
