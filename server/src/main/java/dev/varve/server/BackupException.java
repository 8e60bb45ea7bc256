package dev.varve.server;

/**
 * A backup that did not complete: the sender refused (unknown snapshot, busy), the connection was cut, a frame failed
 * its checksum, or the received image did not verify. The target directory is left marked unfinished, so it refuses
 * to open; running the same backup again completes it.
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
