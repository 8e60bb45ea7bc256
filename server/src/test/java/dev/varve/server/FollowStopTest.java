package dev.varve.server;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.net.InetSocketAddress;
import java.nio.file.Path;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/** Stopping a follow whose standby is behind: it ends after the frame being applied, not after everything received. */
@Timeout(120)
class FollowStopTest {
    @TempDir
    Path dir;

    /**
     * A standby that applies each sender snapshot with two fsyncs falls behind a sender that declares many; its
     * applier worked through every frame it had read ahead (up to 8 MiB: hundreds of thousands of snapshots) before a
     * stop returned, so SIGTERM took minutes and a service manager killed the process.
     */
    @Test
    void aStopReturnsOnceTheFrameBeingAppliedIsIn() throws Exception {
        int snapshots = 400;
        try (Varve store = Varve.open(SmallStore.fresh(dir.resolve("source")).build());
             VarveServer server = VarveServer.start(store, new InetSocketAddress("127.0.0.1", 0), new ServerOptions().allowWrites(true))) {
            store.table("t");
            CountDownLatch imageIn = new CountDownLatch(1);
            CountDownLatch stopped = new CountDownLatch(1);
            AtomicInteger appliedAfterStop = new AtomicInteger();
            SnapshotBackup follow = new SnapshotBackup(server.address(), 1, dir.resolve("standby")).follow(true);
            follow.progress(new ShipProgress() {
                @Override
                public void received(long pages, long imagePages, long bytes) {
                }

                @Override
                public void imageComplete(BackupResult image) {
                    imageIn.countDown();
                    try {
                        stopped.await(60, TimeUnit.SECONDS); // the applier is busy here while the snapshots arrive
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }

                @Override
                public void followed(long writesApplied, long latestSenderSnapshot) {
                    if (stopped.getCount() == 0) appliedAfterStop.incrementAndGet();
                }
            });
            CompletableFuture<BackupResult> run = CompletableFuture.supplyAsync(follow::run);
            assertTrue(imageIn.await(60, TimeUnit.SECONDS), "image in place");
            for (int i = 0; i < snapshots; i++) store.snapshotNow();
            Thread.sleep(500); // the snapshot frames reach the standby's read-ahead (loopback: at once)
            follow.stop();
            stopped.countDown();
            assertEquals(0, run.get(60, TimeUnit.SECONDS).writesFollowed());
            assertEquals(0, appliedAfterStop.get(), "frames applied after the stop");
        }
        assertTrue(Standby.snapshots(dir.resolve("standby")).size() <= 1, "the image's snapshot alone: " + Standby.snapshots(dir.resolve("standby")));
    }
}
