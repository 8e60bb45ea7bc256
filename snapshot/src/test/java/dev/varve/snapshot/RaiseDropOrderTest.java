package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicReference;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertNotNull;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A raise is logged only if it takes effect. The archiver's keepFor check runs without the store's checkpoint lock, so
 * {@link SnapshotArchive#rank(long, int, java.util.function.LongSupplier)} appends the raise's WAL record holding the
 * append gate, which every drop takes: a check due meanwhile waits until the snapshot is raised, and one that came first
 * leaves a raise that logs nothing. (Logged and then refused, a raise came back after a crash that lost the drop.) The
 * wall clock is injected: level 1 keeps a snapshot a minute, level 2 keeps every one.
 */
@Timeout(60)
class RaiseDropOrderTest {
    private static final RankTreePolicy POLICY = RankTreePolicy.levels(Retention.keepFor(Duration.ofMinutes(1)), Retention.keepAll());
    private static final long T0 = Duration.ofDays(20_000).toMillis();
    private static final long AGED = T0 + Duration.ofMinutes(2).toMillis();

    @TempDir
    Path dir;

    private final AtomicLong wall = new AtomicLong(T0);

    /** The archive recovered empty, snapshot 1 declared at rank 1 at T0 and aged out of level 1 since. */
    private SnapshotArchive openAged() {
        SnapshotArchive a = LogCompactionTest.open(FileIOFactory.standard(), dir.resolve("archive"), dir.resolve("pages"), POLICY);
        a.useAgents(Agents.invoked()); // the keepFor checks are the test's own
        a.wallClock(wall::get);
        a.recover(0, true);
        a.declare(1, 1, T0, 10);
        wall.set(AGED);
        return a;
    }

    @Test
    void aKeepForCheckDueWhileTheRaiseIsLoggedWaitsForTheRaise() throws InterruptedException {
        try (SnapshotArchive a = openAged()) { // the next check drops snapshot 1 at rank 1
            AtomicReference<Thread> check = new AtomicReference<>();
            long lsn = a.rank(1, 2, () -> {
                check.set(new Thread(a::enforce, "keepFor check"));
                check.get().start();
                awaitAtTheAppendGate(check.get());
                return 20;
            });
            check.get().join();
            assertEquals(20, lsn, "the raise took effect");
            assertEquals(2, a.find(1).rank(), "raised before the check, which level 2 then keeps it from");
        }
    }

    @Test
    void aRaiseOfASnapshotTheCheckDroppedFirstLogsNothing() {
        try (SnapshotArchive a = openAged()) {
            a.enforce();
            assertNotNull(a.dropped(1));
            List<String> logged = new ArrayList<>();
            assertEquals(-1, a.rank(1, 2, () -> {
                logged.add("a raise of snapshot 1");
                return 20;
            }));
            assertEquals(List.of(), logged, "nothing logged for a raise refused");
            assertEquals(List.of(), a.snapshots());
        }
    }

    /** Waits (bounded by the test's timeout) until {@code t} is parked on the archive's append gate. */
    private static void awaitAtTheAppendGate(Thread t) {
        while (!(t.getState() == Thread.State.WAITING
                && Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName().endsWith("ArchiveLock") && f.getMethodName().equals("lockAppends")))) {
            assertTrue(t.isAlive(), t.getName() + " ended without waiting for the append gate");
            // the test's timeout interrupts this thread: a spin must see it to end
            if (Thread.currentThread().isInterrupted()) throw new IllegalStateException("interrupted before " + t.getName() + " reached the append gate");
            Thread.onSpinWait();
        }
    }
}
