"""Small Lambda functions of the stack (the gateway's tools, the image build trigger), and what every Lambda of the
kit runs on (the webhook's included: ``infra/webhook/``): one Python runtime and one Powertools version."""

from aws_cdk import aws_lambda as lambda_

#: Every Lambda of the kit runs on this runtime. The public Powertools layer is looked up per runtime (its SSM
#: parameter path names it), so one runtime means one layer parameter for the whole stack.
PYTHON_RUNTIME = lambda_.Runtime.PYTHON_3_14
#: The public Powertools for AWS Lambda (Python) layer's version, for every function; keep in step with
#: pyproject's aws-lambda-powertools pin (the version the tests run against).
POWERTOOLS_VERSION = "3.37.0"
