package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.List;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --recovery-time} on 1 MiB: both recovery modes run the store's configuration the table names. */
@Timeout(300)
class RecoveryTimeJobTest {
    private static final String FIRST_ROW = "acknowledged puts at READY";

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
        assertEquals(List.of("WAL_PHYSICAL/SNAPPY", "RF/SNAPPY"), cells(text, ""), text);
        // the labels are the job's; the WAL each killed child left says which mode it ran: WAL_PHYSICAL logs a page's
        // image at its first change, recovery-file mode logical records only
        List<String> physical = cells(text, RecoveryTimeJob.PHYSICAL_ROW);
        assertTrue(Long.parseLong(physical.get(0).replace(",", "")) > 0, "no physical record under WAL_PHYSICAL:\n" + text);
        assertEquals("0", physical.get(1), "physical records under RF:\n" + text);
        // the count is READY's: the child goes on putting until the kill, so "at kill" understated what it had acknowledged
        assertTrue(text.contains(FIRST_ROW), text);
    }

    /** The cells of the table's row labelled {@code label}; with "", the column names (the line above the first row). */
    private static List<String> cells(String text, String label) {
        String[] lines = text.split("\n");
        for (int i = 1; i < lines.length; i++) {
            if (label.isEmpty() && lines[i].startsWith(FIRST_ROW)) return List.of(lines[i - 1].trim().split("\\s+"));
            if (!label.isEmpty() && lines[i].startsWith(label + "  ")) return List.of(lines[i].substring(label.length()).trim().split("\\s+"));
        }
        throw new AssertionError("no row " + (label.isEmpty() ? FIRST_ROW : label) + " in:\n" + text);
    }
}
