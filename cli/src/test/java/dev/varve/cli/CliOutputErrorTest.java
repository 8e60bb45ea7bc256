package dev.varve.cli;

import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.BufferedReader;
import java.io.File;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;
import java.util.concurrent.TimeUnit;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

/**
 * Output that cannot be written fails the command: a PrintWriter swallows write errors, so `varve scan > /dev/full`
 * exited 0 with nothing written, and `varve scan | head -1` went on through the whole table.
 */
@Timeout(60)
class CliOutputErrorTest {
    @TempDir
    Path dir;

    @Test
    void aFailingOutputExits2AndStopsTheScan() {
        table(5_000);
        Full full = new Full(100);
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(full), new PrintWriter(err), "scan", "--table", "t", dir.toString());
        assertEquals(Main.UNUSABLE, code, err.toString());
        assertTrue(err.toString().contains("could not be written"), err.toString());
        assertTrue(full.attempts < 2_100, "the scan stopped within 1,024 rows of the failure (10,000 writes for the whole table): " + full.attempts + " tried");
        StringWriter err2 = new StringWriter();
        assertEquals(Main.UNUSABLE, Main.run(new PrintWriter(new Full(0)), new PrintWriter(err2), "info", dir.toString()), err2.toString());
    }

    /**
     * The tool as a process, its output going where scripts send it: to a full disk ({@code /dev/full}) and into a
     * pipe its reader closes after one line ({@code | head -1}). Main wrapped {@code System.out}, a PrintStream that
     * swallows write errors itself, so the check above never saw one: both exited 0, and the scan ran to its end.
     */
    @Test
    void theToolAsAProcessExits2WhenItsOutputFails() throws Exception {
        table(20_000);
        List<String> cmd = ChildJava.command(Main.class, "scan", "--table", "t", dir.toString());
        File devFull = new File("/dev/full");
        if (devFull.exists()) {
            Process full = new ProcessBuilder(cmd).redirectOutput(devFull).redirectError(ProcessBuilder.Redirect.PIPE).start();
            String err = new String(full.getErrorStream().readAllBytes(), StandardCharsets.UTF_8);
            assertTrue(full.waitFor(60, TimeUnit.SECONDS));
            assertEquals(Main.UNUSABLE, full.exitValue(), "varve scan > /dev/full: " + err);
            assertTrue(err.contains("could not be written"), err);
        }
        Process piped = new ProcessBuilder(cmd).redirectError(ProcessBuilder.Redirect.DISCARD).start();
        try (BufferedReader lines = new BufferedReader(new InputStreamReader(piped.getInputStream(), StandardCharsets.UTF_8))) {
            assertTrue(lines.readLine().startsWith("k"), "the scan's first line");
        } // the reader goes away, as head -1 does
        assertTrue(piped.waitFor(60, TimeUnit.SECONDS));
        assertEquals(Main.UNUSABLE, piped.exitValue(), "varve scan | head -1");
    }

    /** Writes keys k0, k1, ... with 20-byte values into table t of the store in {@link #dir}, a hundred to a batch. */
    private void table(int keys) {
        try (Varve s = Varve.open(SmallStore.fresh(dir).build())) {
            for (int i = 0; i < keys; i += 100) { // a batch may touch at most half the region's pages
                int from = i;
                s.write(b -> {
                    for (int k = from; k < Math.min(from + 100, keys); k++) b.put("t", ("k" + k).getBytes(StandardCharsets.UTF_8), new byte[20]);
                });
            }
        }
    }

    /** A writer that takes {@code room} characters, then fails every write, as a full disk or a closed pipe does. */
    private static final class Full extends Writer {
        private int room;
        int attempts;

        Full(int room) {
            this.room = room;
        }

        @Override
        public void write(char[] cbuf, int off, int len) throws IOException {
            attempts++;
            if (len > room) throw new IOException("No space left on device");
            room -= len;
        }

        @Override
        public void flush() {
        }

        @Override
        public void close() {
        }
    }
}
