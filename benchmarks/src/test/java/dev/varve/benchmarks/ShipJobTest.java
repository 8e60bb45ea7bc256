package dev.varve.benchmarks;

import static org.junit.jupiter.api.Assertions.assertEquals;
import static org.junit.jupiter.api.Assertions.assertFalse;
import static org.junit.jupiter.api.Assertions.assertTrue;

import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.io.TempDir;

/** {@code --ship} on a small image: what it measures against what, and what it leaves behind. */
@Timeout(300)
class ShipJobTest {
    @Test
    void shipsASmallImageAndRemovesItsStores(@TempDir Path tmp) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        ByteArrayOutputStream err = new ByteArrayOutputStream();
        Path dir = tmp.resolve("d");
        int code = Main.run(new String[] {"--ship", "--ship-mib", "4", "--seconds", "1", "--dir", dir.toString()},
                new PrintStream(out, true, StandardCharsets.UTF_8), new PrintStream(err, true, StandardCharsets.UTF_8));
        String text = out.toString(StandardCharsets.UTF_8);
        assertEquals(Main.OK, code, text + err);
        // the source store and the backup are the size of the image twice over (2.5 GiB at the default 1 GiB): the other
        // jobs delete their stores when they end, and so does this one
        assertFalse(Files.exists(dir), "left behind: " + dir);
        // "during / without" compares a warm writer beside the transfer with the baseline: the baseline's writer is warm too
        int warm = text.indexOf("writer warm-up, untimed");
        assertTrue(warm >= 0 && warm < text.indexOf("writer without a transfer"), text);
    }
}
