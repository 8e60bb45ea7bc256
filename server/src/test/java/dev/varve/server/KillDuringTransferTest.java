package dev.varve.server;

import dev.varve.config.RecoveryMode;
import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.EnumSource;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.Map;
import java.util.TreeMap;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertInstanceOf;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A transfer cut by kill -9 of either side (child JVMs, a writer running in the sender): the target refuses to open,
 * saying it is unfinished; running the same backup again completes it, equal to the snapshot. In both recovery modes
 * of the sender (which recovers from the kill before the rerun).
 */
@Timeout(180)
class KillDuringTransferTest {
    private static final long SEED = 20261123;
    private static final int KEYS = 30_000;
    /**
     * About 30 MiB of live data: the sender is killed once the receiver applied the first 4 MiB, while it holds at most
     * its 8 MiB read-ahead and the socket buffers (receive capped at 1 MiB, send at most 4 MiB) more; the receiver child
     * is killed at its first "received" line, at 8 MiB, after which it applies nothing (ReceiverFixture's hold). (45 MiB
     * cost half again the CPU: each image is written, sent, received and read back.)
     */
    private static final long STEPS = 6_000;
    private static final long KILL_AFTER_BYTES = 4L << 20;

    @TempDir
    Path dir;

    private static Map<String, TreeMap<String, byte[]>> model() {
        Workload w = new Workload(SEED, KEYS);
        w.replay(STEPS);
        return w.snapshot();
    }

    private ChildJvm startSender(RecoveryMode mode) {
        return ChildJvm.start(SenderFixture.class, dir.resolve("source").toString(), mode.name(), Long.toString(SEED), Integer.toString(KEYS), Long.toString(STEPS));
    }

    private static void awaitQuietly(CountDownLatch latch) {
        try {
            latch.await(120, TimeUnit.SECONDS);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(300)
    void receiverKilledMidTransfer(RecoveryMode mode) throws Exception {
        Path target = dir.resolve("target");
        try (ChildJvm sender = startSender(mode)) {
            String[] ready = sender.awaitLine("READY", 180).split(" ");
            String[] backup = {ready[1], ready[2], target.toString()};
            try (ChildJvm receiver = ChildJvm.start(ReceiverFixture.class, ready[1], ready[2], target.toString(), "hold")) {
                receiver.awaitLine("received", 120);
                receiver.kill9();
                assertTrue(!receiver.output().contains("complete"), "killed mid-transfer:\n" + receiver.output());
            }
            StoreAssert.assertRefusesToOpen(target);
            try (ChildJvm rerun = ChildJvm.start(ReceiverFixture.class, backup)) {
                assertEquals(0, rerun.awaitExit(180), rerun.output());
                assertTrue(rerun.output().contains("complete " + ready[2]), rerun.output());
            }
        }
        StoreAssert.assertStoreEquals(model(), target);
    }

    @ParameterizedTest
    @EnumSource(RecoveryMode.class)
    @Timeout(300)
    void senderKilledMidTransfer(RecoveryMode mode) throws Exception {
        Path target = dir.resolve("target");
        long snapshot;
        try (ChildJvm sender = startSender(mode)) {
            String[] ready = sender.awaitLine("READY", 180).split(" ");
            snapshot = Long.parseLong(ready[2]);
            CountDownLatch halfway = new CountDownLatch(1);
            CountDownLatch senderDead = new CountDownLatch(1);
            SnapshotBackup backup = new SnapshotBackup(new InetSocketAddress("127.0.0.1", Integer.parseInt(ready[1])), snapshot, target)
                    .receiveBufferBytes(1 << 20) // else loopback autotuning may buffer the rest of the image (tcp_rmem up to 32 MiB)
                    .progress((pages, imagePages, bytes) -> {
                        if (bytes < KILL_AFTER_BYTES || halfway.getCount() == 0) return;
                        halfway.countDown();
                        // the receiver applies nothing until the sender is dead: what it buffered meanwhile (its read-ahead
                        // and the socket's) is far less than the rest of the image, so the kill lands mid-transfer
                        awaitQuietly(senderDead);
                    });
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(backup::run);
            assertTrue(halfway.await(120, TimeUnit.SECONDS), "transfer under way");
            sender.kill9();
            senderDead.countDown();
            ExecutionException e = assertThrows(ExecutionException.class, () -> run.get(120, TimeUnit.SECONDS));
            assertInstanceOf(BackupException.class, e.getCause());
            assertTrue(e.getCause().getMessage().contains("closed"), e.getCause().getMessage());
        }
        StoreAssert.assertRefusesToOpen(target);
        // the sender comes back (recovering from the kill) and the same backup completes
        try (Varve store = Varve.open(ShippingTest.config(dir.resolve("source"), mode), UnforcedFileIOFactory.INSTANCE);
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0))) {
            BackupResult r = new SnapshotBackup(server.address(), snapshot, target).run();
            assertEquals(snapshot, r.snapshotId());
        }
        StoreAssert.assertStoreEquals(model(), target);
    }
}
