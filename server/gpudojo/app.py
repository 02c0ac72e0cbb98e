"""The gpudojo server extension: configuration, services and routes."""

from __future__ import annotations

import os
import threading

from jupyter_server.extension.application import ExtensionApp
from tornado.ioloop import IOLoop
from traitlets import Bool, Float, Integer, Unicode, default

from .analysed_files import MAX_FILE_BYTES
from .services import Services, Settings, default_data_dir


class GPUDojo(ExtensionApp):
    """gpudojo: GPU probing, telemetry and (in later releases) kernels, runs and memory."""

    name = "gpudojo"
    load_other_extensions = True

    data_dir = Unicode(
        help="Where gpudojo keeps its database and run folders (default: <jupyter data dir>/gpudojo)."
    ).tag(config=True)

    gpu_replay_file = Unicode(
        "",
        help=(
            "Replay a GPU recording (from `gpudojo probe --record FILE`) instead of reading live NVML. "
            "Empty (the default) means live NVML."
        ),
    ).tag(config=True)

    content_dir = Unicode(
        "", help="Course content folder (lessons, exercises). Empty: the one packaged with gpudojo."
    ).tag(config=True)
    labs_dir = Unicode("", help="Labs folder. Empty: the one packaged with gpudojo.").tag(config=True)

    telemetry_default_hz = Float(4.0, help="Telemetry rate (Hz) for subscribers that ask for none.").tag(config=True)
    telemetry_max_hz = Float(20.0, help="Highest telemetry rate (Hz) any subscriber gets.").tag(config=True)
    telemetry_history_s = Float(120.0, help="Seconds of recent telemetry sent to each new subscriber.").tag(config=True)
    gpu_retry_s = Float(30.0, help="After NVML failed to start, seconds before it is tried again.").tag(config=True)
    max_concurrent_runs = Integer(2, help="Runs (labs, torchrun jobs) allowed at once; more wait queued.").tag(
        config=True
    )
    run_timeout_s = Float(3600.0, help="A run still going after this many seconds is stopped.").tag(config=True)
    max_run_log_bytes = Integer(
        64 * 1024 * 1024,
        help="Output of one run streamed and kept in its events (bytes); past it, only the rank logs get it.",
    ).tag(config=True)
    max_body_bytes = Integer(1 << 20, help="Largest request body or websocket message gpudojo accepts (bytes).").tag(
        config=True
    )
    kernel_compile_timeout_s = Float(20.0, help="A kernel compile still going after this many seconds is stopped.").tag(
        config=True
    )
    kernel_run_timeout_s = Float(60.0, help="A kernel run (GPU or simulator) is killed after this many seconds.").tag(
        config=True
    )
    kernel_max_source_bytes = Integer(64 * 1024, help="Largest kernel source gpudojo compiles (bytes).").tag(
        config=True
    )
    kernel_compile_max_rss_bytes = Integer(
        2 * 1024**3,
        help="The compile worker is stopped (413) when a compile makes it hold more memory than this (bytes).",
    ).tag(config=True)
    analysis_max_rss_bytes = Integer(
        2 * 1024**3,
        help="The memory- and profile-analysis workers are stopped (413, not retried) when an analysis makes "
        "one hold more memory than this (bytes).",
    ).tag(config=True)
    analysis_keep_open_bytes = Integer(
        128 * 1024**2,
        help="The memory and profile services each keep at most 4 analyses open for queries and at most this "
        "many bytes of them in the server process, least recently used closed first (the one in use stays open "
        "whatever its size; a closed one reopens from its cache folder) (bytes).",
    ).tag(config=True)
    analysis_max_inflated_bytes = Integer(
        1024**3,
        help="A gzipped trace is refused (413) as soon as it inflates past this many bytes.",
    ).tag(config=True)
    analysis_max_file_bytes = Integer(
        MAX_FILE_BYTES,
        help="A memory snapshot or profile trace larger than this is refused (413) before it is analysed "
        "(bytes). The analyses stream their files: a 3.9 GB, 10M-event trace peaks at 1.5 GiB in its worker.",
    ).tag(config=True)
    simulator_max_threads = Integer(
        4096, help="Most threads (grid x block) one launch may have in numba's CUDA simulator."
    ).tag(config=True)
    max_concurrent_checks = Integer(
        2, help="Exercise checks allowed at once on this server; another is refused (409) until one ends."
    ).tag(config=True)
    memory_warm_worker = Bool(
        True,
        help="Start the memory-analysis worker with the server, so the first snapshot opened "
        "does not wait for it to load (about 1 s of CPU at start, in the background).",
    ).tag(config=True)

    @default("data_dir")
    def _default_data_dir(self) -> str:
        return str(default_data_dir())

    def initialize_settings(self) -> None:
        os.makedirs(self.data_dir, exist_ok=True)
        if self.telemetry_max_hz <= 0:
            self.log.warning("gpudojo: telemetry_max_hz must be > 0; using 20 Hz")
            self.telemetry_max_hz = 20.0
        self.settings["gpudojo"] = Services(
            Settings(
                gpu_replay_file=self.gpu_replay_file,
                gpu_retry_s=self.gpu_retry_s,
                telemetry_default_hz=self.telemetry_default_hz,
                telemetry_max_hz=self.telemetry_max_hz,
                telemetry_history_s=self.telemetry_history_s,
                max_body_bytes=self.max_body_bytes,
                max_concurrent_runs=self.max_concurrent_runs,
                run_timeout_s=self.run_timeout_s,
                max_run_log_bytes=self.max_run_log_bytes,
                data_dir=self.data_dir,
                root_dir=self.serverapp.root_dir,
                content_dir=self.content_dir,
                labs_dir=self.labs_dir,
                kernel_compile_timeout_s=self.kernel_compile_timeout_s,
                kernel_run_timeout_s=self.kernel_run_timeout_s,
                kernel_max_source_bytes=self.kernel_max_source_bytes,
                kernel_compile_max_rss_bytes=self.kernel_compile_max_rss_bytes,
                analysis_max_rss_bytes=self.analysis_max_rss_bytes,
                analysis_max_inflated_bytes=self.analysis_max_inflated_bytes,
                analysis_max_file_bytes=self.analysis_max_file_bytes,
                analysis_keep_open_bytes=self.analysis_keep_open_bytes,
                simulator_max_threads=self.simulator_max_threads,
                memory_warm_worker=self.memory_warm_worker,
                max_concurrent_checks=self.max_concurrent_checks,
            )
        )
        self._publish_progress_events(self.settings["gpudojo"])
        source = f"replaying {self.gpu_replay_file}" if self.gpu_replay_file else "live NVML"
        self.log.info("gpudojo: GPU probe uses %s; data in %s", source, self.data_dir)
        # The run service's explicit start step, once the server runs and off the event loop:
        # runs a previous server left running are marked lost and their leftover processes
        # killed now, not whenever someone first opens the Runs list.
        services = self.settings["gpudojo"]
        IOLoop.current().add_callback(lambda: services.runs_executor.submit(services.recover_runs))
        if self.memory_warm_worker:
            # Its own thread: a first start on a machine compiles the scanner (up to a minute).
            IOLoop.current().add_callback(
                lambda: threading.Thread(target=services.warm_memory, name="gpudojo-memory-warm", daemon=True).start()
            )

    def _publish_progress_events(self, services: Services) -> None:
        """Emit every progress write on the server's event bus (course/events.py), so that
        JupyterLab follows progress made anywhere (runs, checks, quizzes) as it happens."""
        event_logger = getattr(self.serverapp, "event_logger", None)
        if event_logger is None:  # a server without an event bus: the UI refreshes on its own actions
            return
        from .course.events import PROGRESS_EVENT_SCHEMA, progress_emitter

        event_logger.register_event_schema(PROGRESS_EVENT_SCHEMA)
        services.progress_listeners.append(progress_emitter(event_logger, IOLoop.current().add_callback))

    def initialize_handlers(self) -> None:
        from .api.routes import url_patterns

        self.handlers.extend(url_patterns())

    async def stop_extension(self) -> None:
        services: Services | None = self.settings.get("gpudojo")
        if services is not None:
            await services.close()
