package dev.varve.engine;

/** How {@link Varve#open(dev.varve.config.VarveConfig, OpenOption...)} treats what it finds on disk. */
public enum OpenOption {
    /**
     * The operator accepts losing data: when the WAL is damaged in the part recovery needs (a record fails its
     * checks although durable records follow it, or a segment is unreadable), cut the log there instead of refusing
     * to open. Every record after the damage is lost, and with it the writes and snapshot declarations it held; the
     * cut is logged and reported in {@link Varve#recoveryReport()}. Never the default: without it, such damage is a
     * {@link dev.varve.core.io.CorruptionException} naming the file and offset, and nothing on disk is changed.
     */
    TRUNCATE_DAMAGED_WAL
}
