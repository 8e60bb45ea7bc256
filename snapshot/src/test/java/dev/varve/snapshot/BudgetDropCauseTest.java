package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * A budget drop the archiver makes is caused by the writes appended when it was made, no later ones. Remembered as
 * "everything appended" instead, the WAL force the checkpoint's flush runs before it takes the append gate never
 * covered it: the drop log's force under the gate forced the WAL again, through whatever writers had appended since,
 * while every declaration (holding the checkpoint write lock, so every writer) waited for that force.
 */
@Timeout(60)
class BudgetDropCauseTest {
    @TempDir
    Path dir;

    /** A WAL appended up to {@link #position}, durable below {@link #durable}; a force notes whether the drop log's write waits for it. */
    private static final class FakeWal implements WalDurability {
        long position;
        long durable;
        final List<String> forcedFrom = new ArrayList<>();

        @Override
        public long durableLsn() {
            return durable;
        }

        @Override
        public long position() {
            return position;
        }

        @Override
        public void forceThrough(long lsn) {
            boolean underGate = Arrays.stream(Thread.currentThread().getStackTrace()).anyMatch(f -> f.getMethodName().equals("writeBuffered"));
            forcedFrom.add(underGate ? "the drop log's write" : "before the append gate");
            durable = position; // everything appended so far
        }
    }

    @Test
    void theFlushForcesTheWalForABudgetDropBeforeTheAppendGateOnly() {
        FakeWal wal = new FakeWal();
        try (SnapshotRegistry registry = new SnapshotRegistry(FileIOFactory.standard(), dir, RankTreePolicy.levels(Retention.keepAll()), 64)) {
            registry.wal(wal);
            registry.prepare(0, true, ArchiveMarks.Mark.none(1));
            registry.cut();
            ArchiveLock lock = new ArchiveLock();
            long[] archiveBytes = {0};
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, 1000, () -> archiveBytes[0]);
            lock.lock();
            try {
                for (long id = 1; id <= 2; id++) {
                    registry.declare(id, 1, id, 10 * id, level -> 0);
                    retention.declared(10 * id);
                }
            } finally {
                lock.unlock();
            }
            wal.position = 30;
            wal.durable = 20; // snapshot 2's declaration not synced yet (LOG_ONLY)
            archiveBytes[0] = 2000; // captures passed the budget
            retention.enforce(); // the archiver's check: snapshot 1 goes
            assertNull(registry.find(1));
            wal.position = 40; // writers append on while the checkpoint writes its pages

            registry.forceDropCauses(); // the flush, before the append gate
            lock.lockAppends();
            try {
                registry.forceDrops();
            } finally {
                lock.unlockAppends();
            }
            assertEquals(List.of("before the append gate"), wal.forcedFrom, "the force before the gate covered the drop's cause");
        }
    }
}
