package dev.varve.cli;

import dev.varve.config.VarveConfig;
import dev.varve.engine.Varve;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

import java.io.IOException;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.io.Writer;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

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
        try (Varve s = Varve.open(VarveConfig.builder().path(dir).dataRegionSize(16L << 20).build())) {
            for (int i = 0; i < 5_000; i++) s.table("t").put(("k" + i).getBytes(StandardCharsets.UTF_8), new byte[20]);
        }
        Full full = new Full(100);
        StringWriter err = new StringWriter();
        int code = Main.run(new PrintWriter(full), new PrintWriter(err), "scan", "--table", "t", dir.toString());
        assertEquals(Main.UNUSABLE, code, err.toString());
        assertTrue(err.toString().contains("could not be written"), err.toString());
        assertTrue(full.attempts < 2_100, "the scan stopped within 1,024 rows of the failure (10,000 writes for the whole table): " + full.attempts + " tried");
        StringWriter err2 = new StringWriter();
        assertEquals(Main.UNUSABLE, Main.run(new PrintWriter(new Full(0)), new PrintWriter(err2), "info", dir.toString()), err2.toString());
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
