"""What ``cdk deploy`` would create, from the synthesized templates: ``make synth`` and ``make demo`` print it.

Usage: ``python scripts/resource_summary.py [CDK_OUT_DIR]`` (default ``cdk.out``).
"""

from __future__ import annotations

import json
import sys
from collections import Counter
from pathlib import Path

#: The resource types worth a line (the rest: policies, permissions, outputs' helpers).
SHOWN = (
    "AWS::BedrockAgentCore",
    "AWS::CloudWatch",
    "AWS::Lambda::Function",
    "AWS::SNS",
    "AWS::DynamoDB",
    "AWS::IAM::Role",
    "AWS::Logs::LogGroup",
    "AWS::SQS",
    "AWS::SecretsManager",
    "AWS::S3::Bucket",
    "AWS::KMS",
)


def summary_lines(outdir: Path) -> list[str]:
    """One line per template (its resource count), then one per shown resource type."""
    lines: list[str] = []
    for template in sorted(outdir.glob("*.template.json")):
        resources = json.loads(template.read_text()).get("Resources", {})
        counts = Counter(r["Type"] for r in resources.values())
        lines.append(f"{template.name}: {len(resources)} resources")
        lines.extend(f"  {n:3d} x {rtype}" for rtype, n in sorted(counts.items()) if rtype.startswith(SHOWN))
    return lines


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else argv
    outdir = Path(args[0] if args else "cdk.out")
    lines = summary_lines(outdir)
    if not lines:
        print(f"no templates in {outdir}", file=sys.stderr)
        return 1
    print("\n".join(lines))
    return 0


if __name__ == "__main__":
    sys.exit(main())
