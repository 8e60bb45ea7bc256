package dev.varve.core.io;

import java.nio.file.Path;

/** Data on disk failed its checksum or its format check. Names the file and the byte offset; never served as data. */
public class CorruptionException extends StorageException {
    private static final long serialVersionUID = 1L;
    private final long offset;

    /** Corruption found in {@code file} at byte {@code offset}. */
    public CorruptionException(String what, Path file, long offset) {
        this(what, file, offset, null);
    }

    /** Corruption found in {@code file} at byte {@code offset}, explaining an earlier finding {@code cause}. */
    public CorruptionException(String what, Path file, long offset, Throwable cause) {
        super(what + " at offset " + offset, file, cause);
        this.offset = offset;
    }

    /** Byte offset in {@link #file()} where the bad data starts. */
    public long offset() {
        return offset;
    }
}
