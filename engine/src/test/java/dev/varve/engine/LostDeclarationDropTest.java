package dev.varve.engine;

import dev.varve.config.RankTreePolicy;
import dev.varve.config.RecoveryMode;
import dev.varve.config.Retention;
import dev.varve.config.VarveConfig;
import dev.varve.config.WalSyncMode;
import dev.varve.core.io.FaultyFileIOFactory;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.nio.file.Path;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicReference;

import static dev.varve.engine.FixtureSupport.utf8;
import static org.junit.jupiter.api.Assertions.assertArrayEquals;
import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A snapshot the retention policy drops because of a newer declaration stays live after a crash that lost that
 * declaration. Under FSYNC a declaration is promised once its commit returns; here the commit of declaration D never
 * gets to write the WAL (the process dies first), while a checkpoint that had already forced the WAL writes its pages
 * and then reclaims: its drop log force (and the reclamation behind it) must not make D's drop of the acknowledged
 * snapshot S durable before D itself is. The crash image is the files as the process left them; under LOG_ONLY, a
 * power cut after the checkpoint.
 */
@Timeout(120)
@Isolated("counts the threads of every store in the JVM")
class LostDeclarationDropTest {
    @TempDir
    Path dir;

    private static VarveConfig config(Path path, RecoveryMode mode) {
        return config(path, mode, WalSyncMode.FSYNC);
    }

    private static VarveConfig config(Path path, RecoveryMode mode, WalSyncMode sync) {
        return FixtureSupport.small(path).walSyncMode(sync).recoveryMode(mode).retention(RankTreePolicy.levels(Retention.keepLast(1))).build();
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void aSnapshotDroppedByADeclarationTheCrashLostIsLiveAfterRecovery(RecoveryMode mode) throws Exception {
        Path live = dir.resolve("live");
        Path image = dir.resolve("image");
        AtomicBoolean declareAtPageWrite = new AtomicBoolean();
        AtomicReference<Thread> declaring = new AtomicReference<>();
        CountDownLatch declared = new CountDownLatch(1);
        CountDownLatch die = new CountDownLatch(1);
        AtomicReference<Varve> store = new AtomicReference<>();
        HookedFileIOFactory io = new HookedFileIOFactory((op, file) -> {
            // D's commit: stopped before its WAL write, as a process killed there
            if (op == HookedFileIOFactory.Op.WRITE && Thread.currentThread() == declaring.get() && file.getParent().getFileName().toString().equals("wal")) {
                declared.countDown();
                awaitQuietly(die);
            }
            // the checkpoint's page writes come after its WAL forces: D is declared now, from another thread
            if (op == HookedFileIOFactory.Op.WRITE && file.getFileName().toString().endsWith(".page") && declareAtPageWrite.getAndSet(false)) {
                Thread t = new Thread(() -> store.get().snapshotNow(), "declares D");
                declaring.set(t);
                t.start();
                awaitQuietly(declared);
            }
        });
        Varve s = Varve.open(config(live, mode), io);
        store.set(s);
        s.table("t").put(utf8("k"), utf8("in S"));
        long snapshotS = s.snapshotNow();
        s.table("t").put(utf8("k"), utf8("after S")); // a page for the checkpoint to write
        declareAtPageWrite.set(true);
        CompletableFuture<?> checkpoint = s.checkpoint();
        while (!checkpoint.isDone() && !checkpointerWaitsForTheWal()) Thread.onSpinWait(); // the test's timeout bounds it
        assertEquals(List.of(), s.snapshots().stream().filter(i -> i.id() == snapshotS).toList(), "D dropped S in memory");
        LogCompactionPowerCutTest.copy(live, image); // the crash: what the process wrote is what there is
        die.countDown();
        checkpoint.get();
        declaring.get().join();
        s.close();

        try (Varve r = Varve.open(config(image, mode))) {
            assertEquals(List.of(snapshotS), r.snapshots().stream().map(SnapshotInfo::id).toList(), "D was lost: S is still the latest, and live");
            try (SnapshotView v = r.asOf(snapshotS)) {
                assertArrayEquals(utf8("in S"), v.table("t").get(utf8("k")));
            }
            assertEquals(List.of(), r.danglingArchiveMappings());
        }
    }

    /**
     * Under LOG_ONLY a declaration is promised once synced, and a power cut loses what no force reached. D is declared
     * (and returns) while the checkpoint writes its pages, after its WAL forces; the checkpoint's reclamation forces the
     * drop log, and then the power goes. Whatever the cut kept of the WAL's unforced tail, S is live unless D survived:
     * the drop log's force forces D's record first.
     */
    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    void afterAPowerCutASnapshotIsDroppedOnlyIfTheDeclarationThatDroppedItSurvived(RecoveryMode mode) throws Exception {
        Path live = dir.resolve("live");
        FaultyFileIOFactory io = new FaultyFileIOFactory(41);
        AtomicBoolean declareAtPageWrite = new AtomicBoolean();
        AtomicReference<Varve> store = new AtomicReference<>();
        long[] snapshotD = {0};
        // not a crash: the trigger runs before each file operation, and declares D at the checkpoint's first page write
        io.crashAt(op -> {
            if (op.kind() == FaultyFileIOFactory.Kind.WRITE && op.names(".page") && declareAtPageWrite.getAndSet(false))
                snapshotD[0] = store.get().snapshotNow();
            return false;
        });
        Varve s = Varve.open(config(live, mode, WalSyncMode.LOG_ONLY), io);
        store.set(s);
        s.table("t").put(utf8("k"), utf8("in S"));
        long snapshotS = s.snapshotNow();
        s.sync(); // S is promised
        s.table("t").put(utf8("k"), utf8("after S"));
        declareAtPageWrite.set(true);
        s.checkpoint().get();
        assertEquals(snapshotS + 1, snapshotD[0], "D was declared during the checkpoint");
        s.halt();
        io.powerLoss();

        try (Varve r = Varve.open(config(live, mode, WalSyncMode.LOG_ONLY))) {
            List<Long> ids = r.snapshots().stream().map(SnapshotInfo::id).toList();
            assertTrue(ids.equals(List.of(snapshotS)) || ids.equals(List.of(snapshotD[0])), "S, or D that dropped it: " + ids);
            if (ids.contains(snapshotS)) {
                try (SnapshotView v = r.asOf(snapshotS)) {
                    assertArrayEquals(utf8("in S"), v.table("t").get(utf8("k")));
                }
            }
            assertEquals(List.of(), r.danglingArchiveMappings());
        }
    }

    /** Whether the checkpointer waits for a WAL force before it writes a drop (what the fix does while D's commit hangs). */
    private static boolean checkpointerWaitsForTheWal() {
        for (var e : Thread.getAllStackTraces().entrySet()) {
            if (!e.getKey().getName().contains("checkpointer")) continue;
            if (Arrays.stream(e.getValue()).anyMatch(f -> f.getMethodName().equals("forceThrough"))) return true;
        }
        return false;
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }
}
