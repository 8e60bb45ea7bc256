package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --recovery-time} on 1 MiB: both recovery modes run the store's configuration the table names. */
@Timeout(300)
class RecoveryTimeJobTest {
    @Test
    void bothModesRecoverWithTheCompressionTheirColumnNames(@TempDir Path tmp) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        // the smallest --dirty-mib: what is checked is the table's labels and rows, which no size changes; each MiB more
        // is only more pages for the two killed children to dirty and for recovery to replay
        int code = Main.run(new String[] {"--recovery-time", "--dirty-mib", "1", "--dir", tmp.resolve("d").toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, text + err);
        // WAL_PHYSICAL's page images follow recoveryCompression (SNAPPY by default), as recovery files do: the physical
        // column ran uncompressed images, which is not the configuration a user gets, under a label that did not say so
        assertTrue(text.contains("WAL_PHYSICAL/SNAPPY"), text);
        assertTrue(text.contains("RF/SNAPPY"), text);
        // the count is READY's: the child goes on putting until the kill, so "at kill" understated what it had acknowledged
        assertTrue(text.contains("acknowledged puts at READY"), text);
    }
}
