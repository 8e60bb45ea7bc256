package dev.varve.cli;

import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;
import org.junit.jupiter.api.parallel.Isolated;

import java.io.IOException;
import java.io.InputStream;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.ServerSocket;
import java.net.Socket;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.stream.Stream;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * {@code backup --from}'s {@code --idle-timeout} and {@code --min-receive-rate} through the tool's command line,
 * against a sender on a loopback socket that stays silent or trickles the start of a frame, a byte each 100 ms (10
 * bytes a second): what a stalled or starved link looks like to the real receiver.
 *
 * <p>Isolated: the trickle keeps the receiver within its one-second idle timeout only while the sender thread gets a
 * core every 100 ms; in a CI run on two cores, beside the module's other tests in the same JVM, it once went a whole
 * second without one and the receiver gave up as told to.
 */
@Timeout(120)
@Isolated("its sender must get a core every 100 ms to stay within the receiver's one-second idle timeout")
class CliTransferLimitsTest {
    @TempDir
    Path dir;

    private ServerSocket listener;
    private Thread sender;

    @AfterEach
    void closeSender() throws Exception {
        if (listener != null) listener.close();
        if (sender != null) sender.join(30_000);
    }

    @Test
    void badValuesAreRefusedNamingTheOptionAndNothingIsWritten() {
        Path to = dir.resolve("t");
        assertUsage("--idle-timeout soon is refused: invalid duration 'soon'", backupFrom("127.0.0.1:1", to, "--idle-timeout", "soon"));
        assertUsage("--idle-timeout 0s is refused: idleTimeout must be positive", backupFrom("127.0.0.1:1", to, "--idle-timeout", "0s"));
        assertUsage("--idle-timeout PT-1S is refused", backupFrom("127.0.0.1:1", to, "--idle-timeout", "PT-1S"));
        assertUsage("--idle-timeout 36501d is refused", backupFrom("127.0.0.1:1", to, "--idle-timeout", "36501d"));
        assertUsage("--min-receive-rate -1 is refused: invalid size '-1'", backupFrom("127.0.0.1:1", to, "--min-receive-rate", "-1"));
        assertUsage("--min-receive-rate 1.5k is refused", backupFrom("127.0.0.1:1", to, "--min-receive-rate", "1.5k"));
        assertUsage("--min-receive-rate 99999999999t is refused: size '99999999999t' is too large",
                backupFrom("127.0.0.1:1", to, "--min-receive-rate", "99999999999t"));
        assertUsage("--idle-timeout needs --from", "backup", dir.toString(), "--idle-timeout", "30s", "--to", to.toString());
        assertUsage("--idle-timeout and --min-receive-rate need --from",
                "backup", dir.toString(), "--idle-timeout", "30s", "--min-receive-rate", "0", "--to", to.toString());
        assertFalse(Files.exists(to), "a refused backup creates nothing");
    }

    @Test
    void aSilentSenderIsGivenUpAfterTheIdleTimeoutGiven() throws Exception {
        String at = startSender(0);
        Path to = dir.resolve("t");
        CliRun r = CliRun.of(backupFrom(at, to, "--idle-timeout", "300ms", "--min-receive-rate", "0"));
        assertEquals(Main.UNUSABLE, r.code(), r.toString());
        assertTrue(r.err().contains("nothing arrived from the sender for 300 ms") && r.err().contains("which this backup created, was removed"), r.toString());
        assertNothingLeft(to);
    }

    /** 10 bytes a second against 1 KiB a second, over windows of 2 s (twice the idle timeout): cut off in the first. */
    @Test
    void aSenderBelowTheRateGivenIsCutOff() throws Exception {
        String at = startSender(200);
        Path to = dir.resolve("t");
        CliRun r = CliRun.of(backupFrom(at, to, "--idle-timeout", "PT1S", "--min-receive-rate", "1k"));
        assertEquals(Main.UNUSABLE, r.code(), r.toString());
        assertTrue(r.err().contains("in the last 2 s, below the least the receiver takes, 1024 bytes/s"), r.toString());
        assertNothingLeft(to);
    }

    /** With 0 the same trickle outlasts a window (30 bytes, 3 s) and the transfer ends only when the sender hangs up. */
    @Test
    void aRateOfZeroTurnsTheWatchOff() throws Exception {
        String at = startSender(30);
        Path to = dir.resolve("t");
        CliRun r = CliRun.of(backupFrom(at, to, "--idle-timeout", "1s", "--min-receive-rate", "0"));
        assertEquals(Main.UNUSABLE, r.code(), r.toString());
        assertTrue(r.err().contains("closed after 0 of 0 pages"), r.toString());
        assertFalse(r.err().contains("below the least"), r.toString());
        assertNothingLeft(to);
    }

    /**
     * None of the image arrived (no whole frame; nothing was written), so the target this run created is removed, as a
     * local backup that fails removes its own: no directory is left that refuses to open over nothing.
     */
    private static void assertNothingLeft(Path to) {
        assertFalse(Files.exists(to), "the failed backup left " + to);
    }

    private static String[] backupFrom(String at, Path to, String... options) {
        return Stream.concat(Stream.of("backup", "--from", at, "--as-of", "1", "--to", to.toString()), Stream.of(options)).toArray(String[]::new);
    }

    /**
     * A sender that takes one connection and sends, a byte each 100 ms, up to {@code bytes} of a frame of 1,000 bytes
     * (it never completes one), then hangs up; with 0 it sends nothing and waits for the receiver to hang up.
     */
    private String startSender(int bytes) throws IOException {
        listener = new ServerSocket(0, 1, InetAddress.getLoopbackAddress());
        listener.setSoTimeout(30_000);
        byte[] frame = {0, 0, 1000 >> 8, (byte) 1000, 1}; // length 1,000, then a type byte; the rest is never sent
        sender = new Thread(() -> {
            try (Socket s = listener.accept()) {
                s.setSoTimeout(30_000);
                OutputStream out = s.getOutputStream();
                for (int i = 0; i < bytes; i++) {
                    out.write(i < frame.length ? frame[i] : 0);
                    out.flush();
                    Thread.sleep(100);
                }
                if (bytes == 0) drain(s.getInputStream());
            } catch (IOException | InterruptedException receiverHungUp) {
                // the receiver gave up: what the test waits for
            }
        }, "trickling-sender");
        sender.start();
        return "127.0.0.1:" + listener.getLocalPort();
    }

    private static void drain(InputStream in) throws IOException {
        while (in.read() >= 0) {
            // the receiver's HELLO, then the end of its connection
        }
    }

    private static void assertUsage(String expected, String... args) {
        CliRun r = CliRun.of(args);
        assertEquals(Main.USAGE, r.code(), r.toString());
        assertTrue(r.err().contains(expected), r.toString());
    }
}
