#!/usr/bin/python3
"""Write a gradient shape file for hvd_bench from a torchvision model.

    /usr/bin/python3 tools/hvd_bench/make_shape_file.py MODEL [MODEL ...] [--out-dir DIR]

One line per `requires_grad` parameter in torchvision's parameter order
(model.parameters()), dimensions separated by spaces; the first line is a `#`
comment with the totals, as in the other files of tools/hvd_bench/shapes.
The model is built untrained (weights=None): only the shapes matter.
"""
import argparse
import os
import sys

import torch
import torchvision


def shape_lines(model_name):
    model = torchvision.models.get_model(model_name, weights=None) \
        if hasattr(torchvision.models, "get_model") \
        else getattr(torchvision.models, model_name)(weights=None)
    shapes = [tuple(p.shape) for p in model.parameters() if p.requires_grad]
    elements = 0
    lines = []
    for shape in shapes:
        n = 1
        for d in shape:
            n *= d
        elements += n
        # A 0-dim parameter is one element: write it as shape "1".
        lines.append(" ".join(str(d) for d in shape) if shape else "1")
    mib = elements * 4 / (1 << 20)
    header = (f"# {model_name}: {len(shapes)} gradient tensors, {elements} float32 elements "
              f"({mib:.1f} MiB), in parameter order (torchvision {torchvision.__version__})")
    return [header] + lines


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="+", help="torchvision model names, e.g. densenet121")
    parser.add_argument("--out-dir", default=os.path.join(here, "shapes"))
    args = parser.parse_args()
    torch.manual_seed(0)
    for name in args.models:
        path = os.path.join(args.out_dir, f"{name}_grads.txt")
        lines = shape_lines(name)
        with open(path, "w") as f:
            f.write("\n".join(lines) + "\n")
        print(f"{path}: {lines[0][2:]}", file=sys.stderr)


if __name__ == "__main__":
    main()
