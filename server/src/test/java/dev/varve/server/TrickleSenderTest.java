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
 * configured limits: 50 or 100 bytes a second, an idle timeout of 1 s or 2 s; the sender trickles a byte each 100 ms,
 * 10 a second.)
 * <p>
 * The fake sender runs on the test thread, and the receiver's idle timeout rightly ends a run in which that thread
 * stalled (starved of the CPU on a loaded VM) for about as long: such a run says nothing of the rate rule, and is
 * run again, up to {@value #TRIES} times (see {@link #untilUnstalled}).
 */
@Timeout(120)
@Isolated("its idle timeouts and rate windows of 1 to 4 s must not be stretched by a neighbour taking the two cores")
class TrickleSenderTest extends HostileSenderFixture {
    private static final Duration IDLE = Duration.ofSeconds(1);
    private static final int RATE = 50;
    private static final int TRIES = 3;

    /** One run of a case, against {@link #sender} into {@link #target}. */
    private interface Run {
        void run() throws Exception;
    }

    /**
     * Runs {@code run} until a run ends without the fake sender having gone silent for three quarters of the
     * receiver's {@code idleTimeout} or more, at most {@value #TRIES} times, each against a new sender into a new
     * target. A run is repeated only on that evidence of a stall, whatever it failed with (an assertion on the
     * receiver's message, a send the receiver hung up on), and the last one's failure is thrown as it is: a broken
     * rule fails every run, stalled or not. Each case sends far more often than that (each 100 or 250 ms).
     */
    private void untilUnstalled(Duration idleTimeout, Run run) throws Exception {
        for (int tried = 1; ; tried++) {
            try {
                run.run();
                return;
            } catch (AssertionError | java.io.IOException e) {
                long silentMillis = sender.longestSilenceNanos() / 1_000_000;
                sender.hangUp(); // ends the run, if it still waits
                String receiver = "the receiver ended with: " + howTheLastRunEnded();
                if (silentMillis < idleTimeout.toMillis() * 3 / 4 || tried == TRIES) {
                    e.addSuppressed(new AssertionError(receiver + " (the test thread went " + silentMillis + " ms without sending)"));
                    throw e;
                }
                System.out.println("TrickleSenderTest: the test thread went " + silentMillis + " ms without sending, against an idle timeout of "
                        + idleTimeout.toMillis() + " ms; " + receiver + "; run again");
                anew("target-" + tried);
            }
        }
    }

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
    void aSenderTricklingTheFirstFrameIsCutOffAndLeavesNothing() throws Exception {
        untilUnstalled(IDLE, () -> {
            CompletableFuture<BackupResult> run = start(backup().idleTimeout(IDLE).minReceiveRate(RATE));
            sender.accept();
            trickleUntilDone(run);
            String m = failure(run);
            assertTrue(m.contains("below the least the receiver takes, 50 bytes/s (SnapshotBackup.minReceiveRate)"), m);
            assertRemoved(m); // not one whole frame arrived
        });
    }

    /**
     * An idle follow stream (a heartbeat of 17 bytes every 250 ms here, 68 bytes a second, below the rate's 100) goes
     * on for more than two rate windows (of 4 s: an idle timeout of 2 s), so that one window holds nothing but
     * heartbeats wherever the windows fall; a frame trickled in it ends the follow, the standby openable. (The
     * heartbeats begin as the standby opens after the image, as a Varve sender's do.)
     */
    @Test
    void aFollowIdlesBelowTheRateButAFrameTrickledInItEndsIt() throws Exception {
        Duration idle = Duration.ofSeconds(2);
        untilUnstalled(idle, () -> {
            CompletableFuture<BackupResult> run = followWithImage(new SnapshotBackup(sender.address(), 1, target).follow(true)
                    .idleTimeout(idle).minReceiveRate(2 * RATE), () -> sender.send(ShipProtocol.HEARTBEAT, f -> { }));
            for (int i = 0; i < 36; i++) {
                sender.send(ShipProtocol.HEARTBEAT, f -> { });
                Thread.sleep(250);
            }
            assertFalse(run.isDone(), "an idle follow goes on");
            trickleUntilDone(run);
            String m = failure(run);
            assertTrue(m.contains("of a frame it began, below the least the receiver takes"), m);
            assertTrue(m.contains("the follow ends"), m);
            try (Varve standby = Varve.open(SmallStore.config(target).build(), UnforcedFileIOFactory.INSTANCE)) {
                assertTrue(standby.table("t").get(bytes("key-1")) != null);
            }
        });
    }

    @Test
    void aNegativeRateIsRefused() {
        IllegalArgumentException e = assertThrows(IllegalArgumentException.class, () -> backup().minReceiveRate(-1));
        assertTrue(e.getMessage().contains("minReceiveRate must be >= 0"), e.getMessage());
    }
}
