package dev.varve.server;

import java.nio.file.Path;

/**
 * A finished backup.
 *
 * @param target     the directory now holding the store
 * @param snapshotId the snapshot it equals
 * @param tables     tables received
 * @param entries    entries the store holds (every table's, checked against the sender's counts)
 * @param bytes      page image bytes received and written
 * @param nanos      wall time from connecting to the store being in place
 * @param verifyNanos of which making the pages durable, opening the store and checking its tables and counts
 * @param writesFollowed follow mode: the sender's writes applied to the standby after the image (0 otherwise)
 */
public record BackupResult(Path target, long snapshotId, int tables, long entries, long bytes, long nanos, long verifyNanos,
                           long writesFollowed) {
}
