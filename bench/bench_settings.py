"""Settings for benchmarks: the production settings plus a bare reference view."""

from statuspage.settings import *  # noqa: F403

ROOT_URLCONF = "bench.bench_urls"
