"""agentkit: the slim client (invoke, sessions, cost, doctor). boto3 is its only third-party dependency."""
