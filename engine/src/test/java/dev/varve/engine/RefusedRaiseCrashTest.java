package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.agent.Agents;
import dev.varve.core.io.FaultyFileIOFactory;
import dev.varve.core.io.FileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.io.IOException;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.varve.engine.FixtureSupport.awaitOlderThan;
import static dev.varve.engine.FixtureSupport.declaredMillis;
import static dev.varve.engine.FixtureSupport.ranksOf;
import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A raise the store refused stays refused after a power cut. {@code rank(S, 2)} finds S live under the checkpoint write
 * lock, but the archiver's keepFor check drops snapshots without that lock: here it drops S, aged out of level 1's
 * keepFor, while the raise waits for the archive's append gate, which a checkpoint holds as it forces the snapshot log
 * (the hook holds that force). The raise is refused, as for any dropped snapshot. The WAL is synced meanwhile, the
 * checkpoint's fsync fails, and the power goes before the drop is durable: S was declared after the recovered mark, so
 * replay declares it again, and a raise the WAL held would make it live at rank 2, kept for good by level 2. Agents are
 * stepped by hand, so the archiver drops S exactly there, and checks keepFor after the reopen only when stepped.
 */
@Timeout(120)
class RefusedRaiseCrashTest {
    private static final Duration KEEP_FOR = Duration.ofMillis(200);
    @TempDir
    Path dir;

    private VarveConfig config(WalSyncMode sync) {
        return FixtureSupport.small(dir).walSyncMode(sync).retention(RankTreePolicy.levels(Retention.keepFor(KEEP_FOR), Retention.keepAll())).build();
    }

    @ParameterizedTest
    @EnumSource(WalSyncMode.class)
    void aRaiseRefusedForASnapshotTheArchiverDroppedMeanwhileTakesNoEffectAfterAPowerCut(WalSyncMode sync) throws Exception {
        FaultyFileIOFactory faulty = new FaultyFileIOFactory(Long.getLong("varve.seed", 73));
        AtomicBoolean holdLogForce = new AtomicBoolean();
        CountDownLatch held = new CountDownLatch(1);
        CountDownLatch release = new CountDownLatch(1);
        AtomicReference<Thread> failedDisk = new AtomicReference<>();
        HookedFileIOFactory io = new HookedFileIOFactory(faulty, (op, file) -> {
            if (Thread.currentThread() == failedDisk.get()) throw new IOException("injected: the disk fails every later call of the checkpoint");
            if (op == HookedFileIOFactory.Op.FORCE && file.getFileName().toString().equals("snapshots.log") && holdLogForce.getAndSet(false)) {
                held.countDown();
                try {
                    release.await();
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
                failedDisk.set(Thread.currentThread());
                throw new IOException("injected: the snapshot log's fsync fails");
            }
        });
        Agents agents = Agents.invoked();
        Varve s = Varve.open(config(sync), io, agents);
        s.table("t").put(utf8("k"), utf8("before S"));
        checkpoint(s, agents); // the mark recovery will start from: S comes after it
        s.table("t").put(utf8("k"), utf8("in S")); // a page for the next checkpoint to write
        long snapshotS = s.snapshotNow();
        awaitAged(s, snapshotS);

        holdLogForce.set(true);
        CompletableFuture<CheckpointStats> failing = s.checkpoint();
        AtomicReference<Throwable> refusal = new AtomicReference<>();
        Thread checkpointer = start("checkpointer", () -> agents.invoker("checkpointer").invoke());
        Thread archiver = null, raise = null;
        try {
            held.await(); // the checkpoint holds the append gate while it forces the snapshot log
            archiver = start("archiver", () -> agents.invoker("archiver").invoke()); // its first step checks keepFor
            awaitAtTheAppendGate(archiver);
            raise = start("raise", () -> {
                try {
                    s.rank(snapshotS, 2);
                } catch (RuntimeException e) {
                    refusal.set(e);
                }
            });
            awaitAtTheAppendGate(raise); // behind the archiver: the gate goes to the archiver first
            s.sync(); // whatever the raise has logged is durable
        } finally {
            release.countDown(); // also when a check above failed: the checkpointer must not stay parked holding the gate
        }
        checkpointer.join();
        archiver.join();
        raise.join();
        assertInstanceOf(SnapshotNotFoundException.class, refusal.get(), "the archiver dropped S while the raise waited: the raise is refused");
        assertTrue(failing.isCompletedExceptionally(), "the checkpoint failed: the drop is not durable");
        s.halt();
        faulty.powerLoss();

        Agents reopened = Agents.invoked();
        try (Varve r = Varve.open(config(sync), FileIOFactory.standard(), reopened)) {
            List<Integer> ranks = ranksOf(r, snapshotS);
            assertTrue(ranks.isEmpty() || ranks.equals(List.of(1)), "the refused raise took effect: S is live at rank " + ranks);
            reopened.invoker("archiver").invoke(); // the keepFor check
            assertEquals(List.of(), ranksOf(r, snapshotS), "level 1's keepFor lets S go, as before the crash");
        }
    }

    private static void checkpoint(Varve s, Agents agents) {
        CompletableFuture<CheckpointStats> done = s.checkpoint();
        while (!done.isDone()) agents.invoker("checkpointer").invoke();
        done.join();
    }

    /**
     * Waits (bounded by the test's timeout) until S is older than level 1's keepFor and more than the archiver's check
     * period (1 s) has passed since it was declared: the archiver's next step checks keepFor and drops it, however
     * recently an earlier step checked.
     */
    private static void awaitAged(Varve s, long snapshot) throws InterruptedException {
        awaitOlderThan(declaredMillis(s, snapshot), Duration.ofMillis(Math.max(KEEP_FOR.toMillis(), 1_100)));
    }

    private static Thread start(String name, Runnable r) {
        Thread t = new Thread(r, name);
        t.setDaemon(true);
        t.start();
        return t;
    }

    /** Waits (bounded by the test's timeout) until {@code t} is parked on the archive's append gate. */
    private static void awaitAtTheAppendGate(Thread t) throws InterruptedException {
        while (!(t.getState() == Thread.State.WAITING
                && Arrays.stream(t.getStackTrace()).anyMatch(f -> f.getClassName().endsWith("ArchiveLock") && f.getMethodName().equals("lockAppends")))) {
            assertTrue(t.isAlive(), t.getName() + " ended without waiting for the append gate");
            Thread.sleep(1);
        }
    }
}
