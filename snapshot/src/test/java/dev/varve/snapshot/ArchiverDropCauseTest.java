package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNull;

/**
 * The drops the archiver makes on its own — the budget passed, a keepFor age — wait for the WAL records they depend
 * on like a declaration's drops: those appended when the budget drop was made (no later ones), and the declarations
 * that pushed a snapshot out of a keepLast window the keepFor age alone does not drop it from.
 */
@Timeout(60)
class ArchiverDropCauseTest {
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

    private final FakeWal wal = new FakeWal();
    private final ArchiveLock lock = new ArchiveLock();

    private SnapshotRegistry registry(RankTreePolicy policy) {
        SnapshotRegistry registry = new SnapshotRegistry(FileIOFactory.standard(), dir, policy, 64);
        registry.wal(wal);
        registry.prepare(0, true, ArchiveMarks.Mark.none(policy.levelCount()));
        registry.cut();
        return registry;
    }

    private void declare(SnapshotRegistry registry, RetentionEnforcer retention, long id, int rank, long declaredMillis, long walLsn) {
        lock.lock();
        try {
            registry.declare(id, rank, declaredMillis, walLsn, level -> 0);
            retention.declared(walLsn);
        } finally {
            lock.unlock();
        }
        wal.position = walLsn + 10;
    }

    /** The checkpoint's flush: the WAL force behind the drops, then the drop log's force under the append gate. */
    private void flush(SnapshotRegistry registry) {
        registry.forceDropCauses();
        lock.lockAppends();
        try {
            registry.forceDrops();
        } finally {
            lock.unlockAppends();
        }
    }

    /**
     * Remembered as "everything ever appended", a budget drop was never covered by the force before the append gate: the
     * drop log's force under the gate forced the WAL again, through whatever writers appended meanwhile, while every
     * declaration (holding the checkpoint write lock, so every writer) waited for that force.
     */
    @Test
    void theFlushForcesTheWalForABudgetDropBeforeTheAppendGateOnly() {
        try (SnapshotRegistry registry = registry(RankTreePolicy.levels(Retention.keepAll()))) {
            long[] archiveBytes = {0};
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, 1000, () -> archiveBytes[0]);
            declare(registry, retention, 1, 1, 1, 10);
            declare(registry, retention, 2, 1, 2, 20);
            wal.durable = 20; // snapshot 2's declaration not synced yet (LOG_ONLY)
            archiveBytes[0] = 2000; // captures passed the budget
            retention.enforce(); // the archiver's check: snapshot 1 goes
            assertNull(registry.find(1));
            wal.position = 40; // writers append on while the checkpoint writes its pages
            flush(registry);
            assertEquals(List.of("before the append gate"), wal.forcedFrom, "the force before the gate covered the drop's cause");
        }
    }

    /**
     * Snapshot S (rank 2) is kept by level 1's keepLast(1) until D is declared, then by level 2's keepFor alone; when
     * that age passes the archiver drops it. Written before D is durable, that drop would stand after a power cut that
     * lost D — and S, the latest snapshot then, which keepLast(1) keeps, would be gone with its data reclaimed.
     */
    @Test
    void aKeepForDropOfASnapshotALaterDeclarationPushedOutOfAKeepLastWindowWaitsForThatDeclaration() {
        long[] now = {0};
        try (SnapshotRegistry registry = registry(RankTreePolicy.levels(Retention.keepLast(1), Retention.keepFor(Duration.ofMinutes(1))))) {
            registry.wallClock(() -> now[0]);
            RetentionEnforcer retention = new RetentionEnforcer(lock, registry, new RankedExtents(), 4096, -1, () -> 0);
            declare(registry, retention, 1, 2, 0, 10); // S
            wal.durable = 20; // S synced
            declare(registry, retention, 2, 1, 1000, 20); // D, not synced
            assertEquals(2, registry.live().size(), "level 2 keeps S for a minute");
            now[0] = 120_000;
            retention.enforce(); // the archiver's keepFor check
            assertNull(registry.find(1));
            flush(registry);
            assertEquals(30, wal.durable, "D forced before S's drop was written");
        }
    }
}
