package dev.varve.server;

import dev.varve.core.io.UnforcedFileIOFactory;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.parallel.Isolated;

import java.time.Duration;
import java.util.concurrent.CompletableFuture;

import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertThrows;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * A sender that sends a byte just inside each idle timeout held the receiver forever: the idle timeout counts bytes,
 * not progress. The receiver now takes at least {@link SnapshotBackup#minReceiveRate} bytes a second over each
 * window of twice the idle timeout while the image arrives, and after it while a frame is under way. (Small
 * configured limits: 50 bytes a second, an idle timeout of 1 s or 3 s; the sender trickles a byte each 100 ms, 10 a
 * second.)
 */
@Timeout(120)
@Isolated("its idle timeouts and rate windows of 1 to 6 s must not be stretched by a neighbour taking the two cores")
class TrickleSenderTest extends HostileSenderFixture {
    private static final Duration IDLE = Duration.ofSeconds(1);
    private static final int RATE = 50;

    /** Sends the bytes of a frame of 1,000 bytes one at a time, 10 a second, until the receiver ends the transfer, or 200 of them. */
    private void trickleUntilDone(CompletableFuture<BackupResult> run) throws Exception {
        byte[] frame = new byte[4 + 1000];
        frame[2] = 1000 >> 8;
        frame[3] = (byte) 1000;
        frame[4] = ShipProtocol.CHANGES;
        for (int i = 0; i < 200 && !run.isDone(); i++) {
            try {
                sender.sendRaw(new byte[] {frame[i]});
            } catch (java.io.IOException closed) {
                break; // the receiver hung up
            }
            Thread.sleep(100);
        }
    }

    @Test
    void aSenderTricklingTheImageIsCutOffAndTheTargetStaysUnfinished() throws Exception {
        CompletableFuture<BackupResult> run = start(backup().idleTimeout(IDLE).minReceiveRate(RATE));
        sender.accept();
        trickleUntilDone(run);
        String m = failure(run);
        assertTrue(m.contains("below the least the receiver takes, 50 bytes/s (SnapshotBackup.minReceiveRate)"), m);
        assertTrue(m.contains("stays unfinished"), m);
        assertUnfinished();
    }

    /**
     * An idle follow stream (a heartbeat every 500 ms here, 204 bytes a window of 6 s, below the rate's 300) goes on
     * for more than a window; a frame trickled in it ends the follow, the standby openable. (An idle timeout of 3 s,
     * six heartbeat periods; the heartbeats begin as the standby opens after the image, as a Varve sender's do.)
     */
    @Test
    void aFollowIdlesBelowTheRateButAFrameTrickledInItEndsIt() throws Exception {
        CompletableFuture<BackupResult> run = followWithImage(new SnapshotBackup(sender.address(), 1, target).follow(true)
                .idleTimeout(Duration.ofSeconds(3)).minReceiveRate(RATE), () -> sender.send(ShipProtocol.HEARTBEAT, f -> { }));
        for (int i = 0; i < 14; i++) {
            sender.send(ShipProtocol.HEARTBEAT, f -> { });
            Thread.sleep(500);
        }
        assertFalse(run.isDone(), "an idle follow goes on");
        trickleUntilDone(run);
        String m = failure(run);
        assertTrue(m.contains("of a frame it began, below the least the receiver takes"), m);
        assertTrue(m.contains("the follow ends"), m);
        try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
            assertTrue(standby.table("t").get(bytes("key-1")) != null);
        }
    }

    @Test
    void aNegativeRateIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> backup().minReceiveRate(-1));
        assertTrue(e.getMessage().contains("minReceiveRate must be >= 0"), e.getMessage());
    }
}
