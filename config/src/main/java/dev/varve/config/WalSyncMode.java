package dev.varve.config;

/** When a write-ahead-log record is forced to stable storage, i.e. what a returned write survives. */
public enum WalSyncMode {
    /** A commit waits for the fsync of its WAL record (group commit); survives power loss. */
    FSYNC,
    /**
     * A commit returns once written to the OS (memory-mapped WAL segment): survives a process crash,
     * not power loss; the WAL is fsynced at checkpoints and segment switches.
     */
    LOG_ONLY,
    /** Like {@link #LOG_ONLY}, plus a background fsync every {@code walFlushFrequency}. */
    BACKGROUND
}
