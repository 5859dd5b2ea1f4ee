"""Webhook Lambda tests: the Lambda code is the top-level ``webhook`` package, imported as ``webhook.…`` here
as in the Lambda runtime."""
