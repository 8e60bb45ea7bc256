package dev.varve.core.io;

import java.nio.file.FileSystemException;
import java.nio.file.Path;

/**
 * A storage operation failed: an I/O error, a full disk, a failed fsync. Says which file. After one of these the
 * component that raised it refuses further work rather than continue on a state it cannot vouch for.
 */
public class StorageException extends RuntimeException {
    private static final long serialVersionUID = 1L;
    private final Path file;

    /** A failure on {@code file} (may be null when no single file is to blame). */
    public StorageException(String message, Path file, Throwable cause) {
        super(withReason(message, cause) + (file == null ? "" : " [file " + file + "]"), cause);
        this.file = file;
    }

    /**
     * The OS's refusal ("Too many open files", "Read-only file system", "No space left on device") in the message when
     * the caller's does not say it: a log line or a tool showing the message alone must tell why, not only what was
     * being done — "cannot create page directory" was all a descriptor limit met while listing it showed.
     */
    private static String withReason(String message, Throwable cause) {
        if (!(cause instanceof FileSystemException f)) return message;
        String reason = f.getReason() != null ? f.getReason() : f.getClass().getSimpleName(); // AccessDenied, NoSuchFile: no reason
        return message != null && message.contains(reason) ? message : message + ": " + reason;
    }

    /** A failure without an underlying exception. */
    public StorageException(String message, Path file) {
        this(message, file, null);
    }

    /**
     * A failure known by its message alone, {@link #file()} null (the message names it): how Infinispan rebuilds an
     * exception that crossed from another node — class name, message and cause — so that a caller on another node of
     * a cluster learns that a store's disk is full instead of waiting out its timeout.
     */
    public StorageException(String message) {
        this(message, null, null);
    }

    /** {@link #StorageException(String)} with the failure's cause. */
    public StorageException(String message, Throwable cause) {
        this(message, null, cause);
    }

    /** The file the failure concerns, or null. */
    public Path file() {
        return file;
    }
}
