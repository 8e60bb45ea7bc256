package dev.varve.core.io;

import java.nio.file.Path;

/** Data on disk failed its checksum or its format check. Names the file and the byte offset; never served as data. */
public class CorruptionException extends StorageException {
    private static final long serialVersionUID = 1L;
    private final long offset;
    private final String what;

    /** Corruption found in {@code file} at byte {@code offset}. */
    public CorruptionException(String what, Path file, long offset) {
        this(what, file, offset, null);
    }

    /** Corruption found in {@code file} at byte {@code offset}, explaining an earlier finding {@code cause}. */
    public CorruptionException(String what, Path file, long offset, Throwable cause) {
        super(what + " at offset " + offset, file, cause);
        this.offset = offset;
        this.what = what;
    }

    /**
     * A failure known by its message alone, {@link #file()} null and {@link #offset()} -1 (the message names them): how Infinispan rebuilds an
     * exception that crossed from another node — class name, message and cause — so that a caller on another node of
     * a cluster learns that a store's disk is full instead of waiting out its timeout.
     */
    public CorruptionException(String message) {
        this(message, null);
    }

    /** {@link #CorruptionException(String)} with the failure's cause. */
    public CorruptionException(String message, Throwable cause) {
        super(message, cause);
        this.offset = -1;
        this.what = message;
    }

    /**
     * What is wrong, without the offset and file the message adds: for a report that names those itself. Not the
     * message cut at its first " at offset ", which would also cut a finding that names another offset.
     */
    public String what() {
        return what;
    }

    /** Byte offset in {@link #file()} where the bad data starts; -1 when rebuilt from a message alone. */
    public long offset() {
        return offset;
    }
}
