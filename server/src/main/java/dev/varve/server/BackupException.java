package dev.varve.server;

/**
 * A backup that did not complete: the sender refused (unknown snapshot, busy), the connection was cut, a frame failed
 * its checksum, or the received image did not verify. Once part of the image was written the target directory is
 * left marked unfinished, so it refuses to open, and running the same backup again completes it; a failure before
 * that leaves the target as it was (removed, when the backup created it). The message says which.
 */
public class BackupException extends RuntimeException {
    private static final long serialVersionUID = 1L;

    /** A backup failure saying what happened. */
    public BackupException(String message) {
        super(message);
    }

    /** A backup failure saying what happened, with its cause. */
    public BackupException(String message, Throwable cause) {
        super(message, cause);
    }
}
