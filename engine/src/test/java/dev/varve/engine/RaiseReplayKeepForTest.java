package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.Queue;
import java.util.concurrent.ConcurrentLinkedQueue;

import static dev.varve.engine.FixtureSupport.awaitOlderThan;
import static dev.varve.engine.FixtureSupport.declaredMillis;
import static dev.varve.engine.FixtureSupport.ranksOf;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;

/**
 * An acknowledged raise survives a crash however long the store stays down. A rank-1 snapshot raised to rank 2 after
 * the last checkpoint, the raise synced, the store killed and reopened once the snapshot is older than level 1's
 * keepFor: replay raises it again from its record, and level 2 keeps it for good. Two checks read today's clock while
 * replay ran, which is past every record replayed, and dropped the snapshot at its old rank before its raise was
 * replayed: the archiver's, which open starts before replay (replay captures too), and the policy check of an earlier
 * replayed raise. Replay now applies the policy from its records alone, and open applies today's clock to the ranks
 * they gave once replay is over.
 */
@Timeout(120)
class RaiseReplayKeepForTest {
    /** Longer than the writes, checkpoint and raises before the crash take on a busy machine: none ages out before it. */
    private static final Duration KEEP_FOR = Duration.ofSeconds(2);
    @TempDir
    Path dir;

    private VarveConfig config() {
        return FixtureSupport.small(dir).name("raise-replay").retention(RankTreePolicy.levels(Retention.keepFor(KEEP_FOR), Retention.keepAll())).build();
    }

    /**
     * The archiver's check: the hook holds each read of the opening thread, once the archiver has started, until the
     * archiver parks between steps, so its first step (which checks keepFor at once) comes before the raise's record is
     * replayed; the put after the mark gives replay a page to read before it.
     */
    @Test
    void anAcknowledgedRaiseIsReplayedBeforeTheArchiverChecksKeepFor() throws InterruptedException {
        Varve s = Varve.open(config());
        s.table("t").put(utf8("k"), utf8("in S"));
        long snapshotS = s.snapshotNow();
        s.checkpoint().join(); // S is declared before the recovered mark
        s.table("u").put(utf8("k"), utf8("after the mark")); // a page replay reads before it reaches the raise
        s.rank(snapshotS, 2);
        s.sync(); // the raise is acknowledged and durable
        long declared = declaredMillis(s, snapshotS);
        s.halt();
        awaitOlderThan(declared, KEEP_FOR); // S ages out of level 1

        Queue<Thread> threads = new ConcurrentLinkedQueue<>();
        Thread opening = Thread.currentThread();
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            if (Thread.currentThread() != opening || op != HookedFileIOFactory.Op.READ) return;
            Thread archiver = threads.stream().filter(t -> t.getName().startsWith("varve-archiver")).findFirst().orElse(null);
            if (archiver != null) awaitIdle(archiver);
        });
        try (Varve r = Varve.open(config(), io, Agents.dedicated(task -> {
            Thread t = new Thread(task);
            threads.add(t);
            return t;
        }))) {
            assertEquals(List.of(2), ranksOf(r, snapshotS), "S, raised to rank 2 before the crash, is kept for good by level 2");
        }
    }

    /**
     * Two raises after the mark, no archiver during replay (agents stepped by hand): the first raise's own policy check,
     * replayed with today's clock, must not drop the second snapshot at its old rank before its raise is replayed.
     */
    @Test
    void aReplayedRaiseDoesNotDropASnapshotWhoseRaiseIsStillToBeReplayed() throws InterruptedException {
        Varve s = Varve.open(config());
        s.table("t").put(utf8("k"), utf8("in S1"));
        long s1 = s.snapshotNow();
        s.table("t").put(utf8("k"), utf8("in S2"));
        long s2 = s.snapshotNow();
        s.checkpoint().join();
        s.rank(s1, 2);
        s.rank(s2, 2);
        s.sync();
        long declared = declaredMillis(s, s2);
        s.halt();
        awaitOlderThan(declared, KEEP_FOR); // both age out of level 1
        try (Varve r = Varve.open(config(), FileIOFactory.standard(), Agents.invoked())) {
            assertEquals(List.of(2, 2), r.snapshots().stream().filter(i -> i.id() == s1 || i.id() == s2).map(SnapshotInfo::rank).toList(),
                    "S1 and S2, both raised to rank 2 before the crash, are kept for good by level 2");
        }
    }

    /** Waits (bounded by the test's timeout) until the agent's thread parks between steps. */
    private static void awaitIdle(Thread agent) {
        while (!(agent.getState() == Thread.State.TIMED_WAITING
                && Arrays.stream(agent.getStackTrace()).anyMatch(f -> f.getClassName().endsWith("IdleStrategy")))) {
            if (!agent.isAlive()) return;
            // the test's timeout interrupts this thread: a spin must see it to end
            if (Thread.currentThread().isInterrupted()) throw new IllegalStateException("interrupted before " + agent.getName() + " parked");
            Thread.onSpinWait();
        }
    }
}
