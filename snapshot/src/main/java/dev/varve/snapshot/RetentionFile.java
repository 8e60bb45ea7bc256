package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.io.CorruptionException;
import dev.varve.core.io.DurableFiles;
import dev.varve.core.io.FileIO;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.io.StorageException;

import java.io.IOException;
import java.nio.ByteBuffer;
import java.nio.file.Path;
import java.util.Optional;

/**
 * The retention policy a store was last opened for writing with, kept in its archive directory
 * ({@link RetentionFileDescriptor}). The policy is configuration, not state: a store may be opened with another.
 * It is kept for those that open a store without its configuration — the {@code varve} tool, read-only opens — whose
 * recovery replays drops the policy decides and which report the rule that keeps each snapshot: with keep-everything
 * defaults they would call snapshots the store had dropped live.
 */
public final class RetentionFile {
    private RetentionFile() {
    }

    /** The policy recorded in {@code archiveDir}; empty when none was (a store of an earlier build, or no archive). */
    public static Optional<RankTreePolicy> read(FileIOFactory io, Path archiveDir) {
        Path file = archiveDir.resolve(RetentionFileDescriptor.FILE);
        if (!io.exists(file)) return Optional.empty();
        try (FileIO f = io.open(file, false)) {
            long size = f.size();
            if (size > RetentionFileDescriptor.HEADER_SIZE + RetentionFileDescriptor.MAX_TEXT_BYTES)
                throw new CorruptionException("retention policy file of " + size + " bytes, longer than any policy", file, 0);
            ByteBuffer b = ByteBuffer.allocate((int) size);
            f.read(b, 0); // until full or the end of the file
            return Optional.of(RetentionFileDescriptor.decode(b.flip(), file));
        } catch (IOException e) {
            throw new StorageException("cannot read the retention policy file: " + e.getMessage(), file, e);
        }
    }

    /**
     * Refuses a policy file this process may not write (a store restored read-only, or by another user): a writable
     * open {@link #record records} the policy once recovery is done, so it checks this before its first write, or a
     * refused open would have changed the store.
     */
    public static void refuseUnwritable(FileIOFactory io, Path archiveDir) {
        Path file = archiveDir.resolve(RetentionFileDescriptor.FILE);
        if (!io.exists(file)) return;
        try {
            io.open(file, false).close();
        } catch (IOException e) {
            throw new StorageException("cannot open the retention policy file for writing, which a writable open records its policy in: "
                    + e.getMessage() + "; give this user write permission on it, or read the store with Varve.openReadOnly", file, e);
        }
    }

    /**
     * Records {@code policy} in {@code archiveDir} unless it is what the file holds: written whole in one rename, so a
     * crash leaves the old policy or the new one. A damaged file is replaced.
     */
    public static void record(FileIOFactory io, Path archiveDir, RankTreePolicy policy) {
        try {
            if (read(io, archiveDir).filter(policy::equals).isPresent()) return;
        } catch (CorruptionException damaged) {
            // the configured policy is what counts: the file only passes it on
        }
        Path file = archiveDir.resolve(RetentionFileDescriptor.FILE);
        ByteBuffer bytes = RetentionFileDescriptor.encode(policy);
        try {
            DurableFiles.replace(io, file, f -> f.write(bytes.duplicate(), 0)).close();
        } catch (IOException e) {
            throw new StorageException("cannot record the retention policy: " + e.getMessage(), file, e);
        }
    }
}
