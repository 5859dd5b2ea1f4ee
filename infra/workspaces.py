"""The workspace-snapshot bucket: where callers upload repository snapshots too large to send inline, for one stage.

A private bucket (public access blocked, S3-managed encryption, TLS only) whose objects under the stage's prefix
expire after :data:`EXPIRY_DAYS`: a snapshot is needed for one invocation, so nothing is kept. Access is per prefix:
:meth:`WorkspaceBucket.grant_read` (the runtime's role: ``s3:GetObject``) and :meth:`WorkspaceBucket.grant_upload`
(callers such as the GitHub OIDC invoker role: ``s3:PutObject``), both on ``<bucket>/<stage>/*`` only. Asynchronous
jobs put patches too large for their result message under ``jobs/`` (expiring after :data:`JOB_PATCH_EXPIRY_DAYS`):
:meth:`WorkspaceBucket.grant_put_job_patches` (the runtime) and :meth:`WorkspaceBucket.grant_read_job_patches` (the
events' consumer). The runtime
learns the location from ``AGENTKIT_WORKSPACE_S3_URI`` (:attr:`WorkspaceBucket.uri`) and reads nothing outside it
(``runtime/workspace/s3.py``). Output: ``WorkspaceBucketName``. See docs/repository-work.md.
"""

from __future__ import annotations

import aws_cdk as cdk
from aws_cdk import aws_iam as iam
from aws_cdk import aws_s3 as s3
from constructs import Construct

from infra import nag

#: Days a snapshot object lives (the shortest S3 lifecycle expiration).
EXPIRY_DAYS = 1
#: Where asynchronous jobs put a patch too large for their result message (``jobs/<session id>/<job id>/patch.diff``;
#: ``runtime/jobs/fit.py``), and how long it lives: as long as the result message naming it can (the job events
#: queue keeps messages 14 days, dead-letter queue included: ``infra/job_events.py``).
JOBS_PREFIX = "jobs/"
JOB_PATCH_EXPIRY_DAYS = 14


class WorkspaceBucket(Construct):
    """The snapshot bucket of one stage.

    Args:
        stage: the prefix every object lies under (``<stage>/``).
        removal_policy: the stage's (``destroy`` empties and deletes the bucket with the stack).

    Attributes: ``bucket``, ``prefix`` (``<stage>/``), ``uri`` (``s3://<bucket>/<stage>/``).
    """

    def __init__(
        self, scope: Construct, construct_id: str, *, stage: str, removal_policy: cdk.RemovalPolicy
    ) -> None:
        super().__init__(scope, construct_id)
        self.prefix = f"{stage}/"
        self.bucket = s3.Bucket(
            self,
            "Bucket",
            block_public_access=s3.BlockPublicAccess.BLOCK_ALL,
            encryption=s3.BucketEncryption.S3_MANAGED,
            enforce_ssl=True,
            object_ownership=s3.ObjectOwnership.BUCKET_OWNER_ENFORCED,
            lifecycle_rules=[
                s3.LifecycleRule(
                    id="expire-snapshots",
                    prefix=self.prefix,
                    expiration=cdk.Duration.days(EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(EXPIRY_DAYS),
                ),
                s3.LifecycleRule(
                    id="expire-job-patches",
                    prefix=JOBS_PREFIX,
                    expiration=cdk.Duration.days(JOB_PATCH_EXPIRY_DAYS),
                    abort_incomplete_multipart_upload_after=cdk.Duration.days(EXPIRY_DAYS),
                ),
            ],
            removal_policy=removal_policy,
            auto_delete_objects=removal_policy == cdk.RemovalPolicy.DESTROY,
        )
        self.uri = f"s3://{self.bucket.bucket_name}/{self.prefix}"
        nag.acknowledge(
            self.bucket,
            [
                (
                    "AwsSolutions::AwsSolutions-S1",
                    "Snapshot objects live one day and are read once by the runtime; reads and writes are limited "
                    "to the stage prefix by IAM. Enable CloudTrail S3 data events for an audit trail instead of a "
                    "second, log bucket.",
                )
            ],
        )
        cdk.CfnOutput(  # at stack scope: the logical id is the documented name, without a path hash
            cdk.Stack.of(self),
            "WorkspaceBucketName",
            value=self.bucket.bucket_name,
            description=f"Workspace snapshots: upload under s3://<this>/{self.prefix} (agentkit --workspace-s3)",
        )

    def _objects(self) -> str:
        return self.bucket.arn_for_objects(f"{self.prefix}*")

    def grant_read(self, role: iam.IRole) -> None:
        """``s3:GetObject`` on the stage's snapshots (the runtime's role)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:GetObject"], resources=[self._objects()])
        )
        self._acknowledge_prefix(role)

    def grant_upload(self, role: iam.IRole) -> None:
        """``s3:PutObject`` on the stage's snapshots (a caller's role)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(actions=["s3:PutObject"], resources=[self._objects()])
        )
        self._acknowledge_prefix(role)

    def grant_put_job_patches(self, role: iam.IRole) -> None:
        """``s3:PutObject`` on ``jobs/*``: the runtime puts a job's patch there when it is too large for the result
        message (``AGENTKIT_WORKSPACE_BUCKET``)."""
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:PutObject"], resources=[self.bucket.arn_for_objects(f"{JOBS_PREFIX}*")]
            )
        )
        self._acknowledge_prefix(role, JOBS_PREFIX)

    def grant_read_job_patches(self, role: iam.IRole) -> None:
        """``s3:GetObject`` on ``jobs/*``: a consumer of the job events reads a patch named by ``patch_s3_uri``."""
        role.add_to_principal_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"], resources=[self.bucket.arn_for_objects(f"{JOBS_PREFIX}*")]
            )
        )
        self._acknowledge_prefix(role, JOBS_PREFIX)

    def _acknowledge_prefix(self, role: iam.IRole, prefix: str | None = None) -> None:
        prefix = prefix or self.prefix
        nag.acknowledge(
            role,
            [
                nag.iam5(
                    f"<{cdk.Stack.of(self).get_logical_id(self.bucket.node.default_child)}.Arn>/{prefix}*",  # type: ignore[arg-type]
                    "Objects get a new key per snapshot or job; the grant is one prefix of one bucket.",
                )
            ],
        )
