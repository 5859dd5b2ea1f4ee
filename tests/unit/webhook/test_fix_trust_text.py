"""Text the agent or an issue's author wrote reaches the pull request, its commit and the issue's comment
inert: no image by reference fetches anything, no closing keyword closes another issue on merge. Driven
through the real reporter handler and the GitHub repository stand-in (real git objects)."""

from __future__ import annotations

import re
from types import SimpleNamespace

import pytest

from tests.unit.webhook import test_fix_reporter as base

pytestmark = pytest.mark.filterwarnings("ignore:No application metrics to publish:UserWarning")
# The reporter's world (a recorded job, the repository stand-in, the handler configured) and its helpers.
api, world, _base_sha, event, deliver = base.api, base.world, base._base_sha, base.event, base.deliver
#: GitHub's closing keywords before a reference (docs: "Linking a pull request to an issue using a keyword").
CLOSES = re.compile(r"\b(close[sd]?|fix(e[sd])?|resolve[sd]?)\s*:?\s+([\w.-]+/[\w.-]+)?#\d+", re.IGNORECASE)


def _report(world: SimpleNamespace, text: str) -> tuple[dict, str]:
    result = {"type": "result", "text": text, "cost_usd": 0.1, "duration_ms": 10, "patch": base.PATCH}
    assert deliver(event(world, 2, "result", result=result)) == {"batchItemFailures": []}
    [pull] = world.api.pulls
    [comment] = world.api.comments.values()
    return pull, str(comment["body"])


@pytest.mark.parametrize(
    "text",
    [
        "Fixed. ![tracking][r]\n\n[r]: https://evil.example/pixel.png",
        "Fixed. ![r][]\n\n[r]: https://evil.example/pixel.png",
        "Fixed. ![r]\n\n[r]: https://evil.example/pixel.png",
        "Fixed. ![spans\ntwo lines](https://evil.example/pixel.png)",
    ],
)
def test_reference_style_images_do_not_reach_the_pull_request_or_the_comment(
    world: SimpleNamespace, text: str
) -> None:
    pull, comment = _report(world, text)
    assert "![" not in pull["body"] and "![" not in comment


def test_closing_keywords_from_the_agent_and_the_issue_title_close_nothing(world: SimpleNamespace) -> None:
    world.job = world.job.model_copy(update={"title": "Resolves #99"})
    world.jobs._client.update_item(
        TableName="idem",
        Key={"id": {"S": f"reply#{base.KEY}"}},
        UpdateExpression="SET job = :j",
        ExpressionAttributeValues={":j": {"S": world.job.model_dump_json()}},
    )
    pull, _ = _report(
        world, "Fixes #12, closes octo/kit#13 and FIXED: #14. Resolved https://github.com/o/r/issues/1"
    )
    commit = world.api.git.commits[world.api.forks["agentkit-bot/kit"].refs[pull["head"]["ref"]]]
    for text in (pull["title"], pull["body"], commit.message):
        assert not CLOSES.search(text), text
    assert "#99" in pull["title"] and "#12" in pull["body"] and "octo/kit#13" in pull["body"]
    assert "Resolved see https://github.com/o/r/issues/1" in pull["body"]
