"""The HTTP edge: the AgentCore contract's server (``POST /invocations``, ``GET /ping``), the guard in front of it,
the local stop route, and the bridge between the server's loop and the worker loop the sessions live on."""
