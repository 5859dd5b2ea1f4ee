"""Where the runtime's container image comes from: ``local`` Docker or ``codebuild`` (no local Docker).

``local``: a ``DockerImageAsset`` built for ``linux/arm64`` by ``cdk deploy`` on this machine
(needs Docker with arm64 emulation on x86 hosts).

``codebuild``: ``cdk deploy`` only uploads the build context as a zip (an S3 asset, no Docker at synth or
deploy). A custom resource starts an ARM CodeBuild build that builds the image, pushes it to our ECR
repository tagged with the context's hash, and then answers CloudFormation itself (PUT to the pre-signed
response URL), so the stack waits for the image before creating the runtime. A changed context changes the
tag and rebuilds.

IAM: CodeBuild role — s3:GetObject on the context object, ECR push/pull on our repository,
ecr:GetAuthorizationToken, its own logs. Trigger function (code in ``infra/functions/image_build_trigger``) —
codebuild:StartBuild on the project only.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path

import aws_cdk as cdk
from aws_cdk import aws_bedrockagentcore as agentcore
from aws_cdk import aws_codebuild as codebuild
from aws_cdk import aws_ecr as ecr
from aws_cdk import aws_ecr_assets as ecr_assets
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_logs as logs
from aws_cdk import aws_s3_assets as s3_assets
from constructs import Construct, IDependable

from infra import lifecycle
from infra.config import AppConfig
from infra.functions import PYTHON_RUNTIME

TRIGGER_DIR = Path(__file__).resolve().parent / "functions" / "image_build_trigger"
"""The custom resource's Lambda code (``index.handler``), shipped as a plain asset."""

BUILD_COMMANDS = [
    'aws s3 cp "s3://$SRC_BUCKET/$SRC_KEY" /tmp/context.zip',
    "mkdir -p /tmp/context && cd /tmp/context && unzip -q /tmp/context.zip",
    'aws ecr get-login-password | docker login --username AWS --password-stdin "${REPO_URI%%/*}"',
    'cd /tmp/context && docker build -t "$REPO_URI:$IMAGE_TAG" .',
    'docker push "$REPO_URI:$IMAGE_TAG"',
]
REPORT_COMMANDS = [
    'if [ "$CODEBUILD_BUILD_SUCCEEDING" = "1" ]; then BODY="$CFN_SUCCESS_BODY"; '
    'else BODY="$CFN_FAILED_BODY"; fi',
    'if [ -n "$CFN_RESPONSE_URL" ]; then curl -sS -X PUT -H \'Content-Type:\' --data-binary "$BODY" '
    '"$CFN_RESPONSE_URL"; fi',
]


def dockerignore_patterns(directory: Path) -> list[str]:
    """Patterns from ``directory/.dockerignore`` (comments and blanks dropped)."""
    path = directory / ".dockerignore"
    if not path.exists():
        return []
    lines = (line.strip() for line in path.read_text().splitlines())
    return [line for line in lines if line and not line.startswith("#")]


@dataclass(frozen=True)
class ImageSource:
    """The runtime artifact, the repository to grant pulls on, and what the runtime must wait for."""

    artifact: agentcore.AgentRuntimeArtifact
    repository: ecr.IRepository
    ready: IDependable | None = None


def local_image(scope: Construct, construct_id: str, *, directory: Path) -> ImageSource:
    """``cdk deploy`` builds ``directory/Dockerfile`` locally for linux/arm64 (synth only stages it)."""
    asset = ecr_assets.DockerImageAsset(
        scope,
        construct_id,
        directory=str(directory),
        platform=ecr_assets.Platform.LINUX_ARM64,
        ignore_mode=cdk.IgnoreMode.DOCKER,
        exclude=dockerignore_patterns(directory),
    )
    return ImageSource(
        artifact=agentcore.AgentRuntimeArtifact.from_ecr_repository(asset.repository, asset.image_tag),
        repository=asset.repository,
    )


class CodeBuildImage(Construct):
    """Builds the arm64 image in CodeBuild during ``cdk deploy`` (see module docstring)."""

    def __init__(
        self,
        scope: Construct,
        construct_id: str,
        *,
        directory: Path,
        removal_policy: cdk.RemovalPolicy,
        log_retention: logs.RetentionDays,
    ) -> None:
        super().__init__(scope, construct_id)
        context = s3_assets.Asset(
            self,
            "Context",
            path=str(directory),
            ignore_mode=cdk.IgnoreMode.DOCKER,
            exclude=dockerignore_patterns(directory),
        )
        self.repository = ecr.Repository(
            self,
            "Repository",
            image_scan_on_push=True,
            removal_policy=removal_policy,
            empty_on_delete=removal_policy == cdk.RemovalPolicy.DESTROY,
            lifecycle_rules=[ecr.LifecycleRule(max_image_count=10, description="keep the last 10 images")],
        )
        self.image_tag = context.asset_hash
        build_logs = logs.LogGroup(self, "BuildLogs", retention=log_retention, removal_policy=removal_policy)
        self.project = codebuild.Project(
            self,
            "Project",
            description="Builds the agent runtime image (linux/arm64) and pushes it to ECR",
            environment=codebuild.BuildEnvironment(
                build_image=codebuild.LinuxArmBuildImage.AMAZON_LINUX_2_STANDARD_3_0,
                compute_type=codebuild.ComputeType.SMALL,
                privileged=True,
            ),
            environment_variables={
                "REPO_URI": codebuild.BuildEnvironmentVariable(value=self.repository.repository_uri),
                "IMAGE_TAG": codebuild.BuildEnvironmentVariable(value=self.image_tag),
                "SRC_BUCKET": codebuild.BuildEnvironmentVariable(value=context.s3_bucket_name),
                "SRC_KEY": codebuild.BuildEnvironmentVariable(value=context.s3_object_key),
            },
            build_spec=codebuild.BuildSpec.from_object(
                {
                    "version": "0.2",
                    "phases": {
                        "build": {"commands": BUILD_COMMANDS},
                        "post_build": {"commands": REPORT_COMMANDS},
                    },
                }
            ),
            logging=codebuild.LoggingOptions(
                cloud_watch=codebuild.CloudWatchLoggingOptions(log_group=build_logs)
            ),
            timeout=cdk.Duration.minutes(45),
        )
        self.project.add_to_role_policy(
            iam.PolicyStatement(
                actions=["s3:GetObject"],
                resources=[f"arn:{cdk.Aws.PARTITION}:s3:::{context.s3_bucket_name}/{context.s3_object_key}"],
            )
        )
        self.repository.grant_pull_push(self.project)

        trigger_logs = logs.LogGroup(
            self, "TriggerLogs", retention=log_retention, removal_policy=removal_policy
        )
        trigger_role = iam.Role(
            self,
            "TriggerRole",
            assumed_by=iam.ServicePrincipal("lambda.amazonaws.com"),
            description="Starts the image build for CloudFormation",
        )
        trigger_role.add_to_policy(
            iam.PolicyStatement(actions=["codebuild:StartBuild"], resources=[self.project.project_arn])
        )
        trigger_role.add_to_policy(
            iam.PolicyStatement(
                actions=["logs:CreateLogStream", "logs:PutLogEvents"], resources=[trigger_logs.log_group_arn]
            )
        )
        trigger = lambda_.Function(
            self,
            "Trigger",
            description="Starts the CodeBuild image build; CodeBuild answers CloudFormation",
            runtime=PYTHON_RUNTIME,
            architecture=lambda_.Architecture.ARM_64,
            handler="index.handler",
            code=lambda_.Code.from_asset(str(TRIGGER_DIR), exclude=["__pycache__", "*.pyc"]),
            role=trigger_role,
            log_group=trigger_logs,
            timeout=cdk.Duration.seconds(60),
        )
        self.build = cdk.CustomResource(
            self,
            "Build",
            service_token=trigger.function_arn,
            resource_type="Custom::AgentImageBuild",
            properties={"ProjectName": self.project.project_name, "ImageTag": self.image_tag},
        )
        self.build.node.add_dependency(trigger_role)

    @property
    def source(self) -> ImageSource:
        return ImageSource(
            artifact=agentcore.AgentRuntimeArtifact.from_ecr_repository(self.repository, self.image_tag),
            repository=self.repository,
            ready=self.build,
        )


def image_source(scope: Construct, construct_id: str, *, config: AppConfig, directory: Path) -> ImageSource:
    """Build ``directory``'s image per ``config.image_build`` (``local`` | ``codebuild``); a CodeBuild image's
    repository and build logs follow the stage's ``removal_policy`` and ``log_retention_days``.

    Raises:
        ValueError: unknown mode, or ``directory`` has no Dockerfile.
    """
    mode = config.image_build
    if not (directory / "Dockerfile").is_file():
        raise ValueError(f"no Dockerfile in {directory}")
    if mode == "local":
        return local_image(scope, construct_id, directory=directory)
    if mode == "codebuild":
        return CodeBuildImage(
            scope,
            construct_id,
            directory=directory,
            removal_policy=lifecycle.removal_policy(config.settings),
            log_retention=lifecycle.log_retention(config.settings),
        ).source
    raise ValueError(f"image_build {mode!r} is not one of: local, codebuild")
