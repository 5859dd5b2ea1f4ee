"""Process life: start-up work ordered by platform version (:mod:`~runtime.process.prewarm`), values renewed after
a snapshot restore (:mod:`~runtime.process.restore`), the close on SIGTERM (:mod:`~runtime.process.shutdown`) and how
many sessions fit in the container (:mod:`~runtime.process.limits`)."""
