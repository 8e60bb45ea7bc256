package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import dev.varve.core.memory.PageMemory;
import dev.varve.core.store.PageStore;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A drop the policy makes because of a declaration reaches the drop log only once the WAL holds that declaration
 * durably: a drop written first would stand after a crash that lost the declaration (recovery keeps a drop after the
 * mark of a snapshot declared before it), and reclamation, which forces the drop log, may delete the snapshot's data.
 * A fake WAL records what the archive asks it to force, and what the drop log held on disk at that moment.
 */
@Timeout(60)
class DropCauseDurabilityTest {
    @TempDir
    Path dir;

    /** The WAL as the archive sees it: durable below {@link #durable}; a force records the LSN and the drop log's size then. */
    private final class FakeWal implements WalDurability {
        long durable;
        final List<long[]> forced = new ArrayList<>();

        @Override
        public long durableLsn() {
            return durable;
        }

        @Override
        public long position() {
            return durable; // not read: no budget
        }

        @Override
        public void forceThrough(long lsn) {
            forced.add(new long[]{lsn, dropEntriesOnDisk()});
            durable = Math.max(durable, lsn + 1);
        }
    }

    private long dropEntriesOnDisk() {
        try {
            return (Files.size(dir.resolve("archive").resolve("drops.log")) - MaplogDescriptor.HEADER_SIZE) / MaplogDescriptor.ENTRY_SIZE;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    private SnapshotArchive open(FakeWal wal) {
        SnapshotArchive a = new SnapshotArchive(FileIOFactory.standard(), ArchiveSettings.builder(dir.resolve("archive"),
                RankTreePolicy.levels(Retention.keepLast(1))).pageSize(4096).skippyLevels(1).skippyNodeEntries(16).captureBufferBytes(1L << 20)
                .segmentBytes(256L << 10).pageWindow(0).build());
        a.wal(wal);
        a.attach(new PageMemory(new PageStore(FileIOFactory.standard(), dir.resolve("pages"), 4096), 16L << 20, 1L << 20));
        return a;
    }

    /** Snapshot id is declared at WAL LSN 10 * id. */
    private static void declare(SnapshotArchive a, long id) {
        a.declare(id, 1, 0, 10 * id);
    }

    @Test
    void reclamationForcesTheDeclarationThatDroppedASnapshotBeforeTheDrop() {
        FakeWal wal = new FakeWal();
        try (SnapshotArchive a = open(wal)) {
            a.recover(0, true);
            declare(a, 1);
            wal.durable = 11; // snapshot 1's declaration committed
            a.onMark(1, 11);
            a.beforeStartMarker(1, 11);
            declare(a, 2); // after the mark, not durable: keepLast(1) drops snapshot 1
            assertNull(a.find(1));
            a.afterEndMarker(1, 11); // reclamation forces the drop log
            assertEquals(1, wal.forced.size(), "one WAL force, before the drop was written");
            assertEquals(20, wal.forced.get(0)[0], "through snapshot 2's declaration");
            assertEquals(0, wal.forced.get(0)[1], "the drop log held no drop when the WAL was forced");
            assertEquals(1, dropEntriesOnDisk());
        }
    }

    /**
     * Many drops between checkpoints fill the drop log's buffer: held in memory (the buffer grows) rather than written,
     * and no WAL force under the archive's locks; the next force of the drop log forces the WAL once, then writes them.
     */
    @Test
    void aFullBufferOfDropsWhoseDeclarationsAreNotDurableStaysInMemory() {
        FakeWal wal = new FakeWal();
        long last = 5000;
        try (SnapshotArchive a = open(wal)) {
            a.recover(0, true);
            for (long id = 1; id <= last; id++) declare(a, id);
            assertEquals(0, dropEntriesOnDisk(), "no drop written before its declaration is durable");
            assertEquals(List.of(), wal.forced, "no WAL force on a declaration");
            a.onMark(1, 10 * last + 1);
            a.beforeStartMarker(1, 10 * last + 1); // forces the drop log
            assertEquals(1, wal.forced.size());
            assertEquals(10 * last, wal.forced.get(0)[0]);
            assertEquals(0, wal.forced.get(0)[1]);
            assertEquals(last - 1, dropEntriesOnDisk());
        }
    }

    /**
     * Under FSYNC each declaration is durable once its commit returns, after the archive dropped what it pushed out:
     * a full buffer holds the drops of committed declarations and is written as before (the one being declared waits
     * in the buffer), with no WAL force — it does not grow until the next checkpoint.
     */
    @Test
    void dropsOfCommittedDeclarationsAreWrittenAsTheBufferFills() {
        FakeWal wal = new FakeWal();
        try (SnapshotArchive a = open(wal)) {
            a.recover(0, true);
            for (long id = 1; id <= 5000; id++) {
                declare(a, id);
                wal.durable = 10 * id + 1; // its commit
            }
            assertEquals(List.of(), wal.forced);
            assertEquals(4096, dropEntriesOnDisk(), "two buffers of 2048 drops written as they filled");
        }
    }

    /**
     * Under BACKGROUND the flusher makes declarations durable some time after they return: with a hundred declarations
     * between its syncs, a full buffer holds the drop of one not synced yet, so it grows until the checkpoint (what
     * operations.md says of the heap the drops take), and still no WAL is forced on a declaration.
     */
    @Test
    void dropsOfDeclarationsTheFlusherSyncsLateWaitForTheCheckpoint() {
        FakeWal wal = new FakeWal();
        try (SnapshotArchive a = open(wal)) {
            a.recover(0, true);
            for (long id = 1; id <= 5000; id++) {
                declare(a, id);
                if (id % 100 == 0) wal.durable = 10 * id + 1; // the flusher's sync
            }
            assertEquals(List.of(), wal.forced);
            assertEquals(0, dropEntriesOnDisk(), "every full buffer held the drop of the declaration just made");
        }
    }
}
