package dev.varve.snapshot;

import dev.varve.config.RankTreePolicy;
import dev.varve.core.io.CorruptionException;

import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.util.zip.CRC32C;

/**
 * The on-disk layout of {@code retention.policy} in the archive directory ({@link RetentionFile}): the retention
 * policy the store was last opened for writing with. All fields are little-endian.
 *
 * <pre>
 *  0              8         12              20          24          28
 * +--------------+---------+---------------+-----------+-----------+------------------------+
 * | magic (long) | version | budget (long) | text len  | crc32c    | levels text (UTF-8) ... |
 * +--------------+---------+---------------+-----------+-----------+------------------------+
 *   crc32c covers bytes [0, 24) and the text.
 *   budget: the archive budget in bytes, -1 for none.
 *   levels text: the rules, level 1 first, in RankTreePolicy.parse syntax (e.g. keepLast(60),keepFor(PT24H)).
 * </pre>
 *
 * <p>Format versions: 1, the initial layout.
 */
final class RetentionFileDescriptor {
    /** "VARVERP1" as a long (stored little-endian). */
    static final long MAGIC = 0x5641525645525031L;
    static final int VERSION = 1;

    static final int VERSION_OFFSET = 8;
    static final int BUDGET_OFFSET = 12;
    static final int TEXT_LENGTH_OFFSET = 20;
    static final int CRC_OFFSET = 24;
    static final int HEADER_SIZE = 28;
    /** Longer than any policy of 16 levels: a bigger length is damage. */
    static final int MAX_TEXT_BYTES = 4096;

    static final String FILE = "retention.policy";

    private RetentionFileDescriptor() {
    }

    /** The file's bytes for {@code policy}. */
    static ByteBuffer encode(RankTreePolicy policy) {
        StringBuilder levels = new StringBuilder();
        for (int i = 0; i < policy.levelCount(); i++) levels.append(i == 0 ? "" : ",").append(policy.levels().get(i));
        byte[] text = levels.toString().getBytes(StandardCharsets.UTF_8);
        ByteBuffer b = ByteBuffer.allocate(HEADER_SIZE + text.length).order(ByteOrder.LITTLE_ENDIAN);
        b.putLong(0, MAGIC).putInt(VERSION_OFFSET, VERSION).putLong(BUDGET_OFFSET, policy.budgetBytes().orElse(-1))
                .putInt(TEXT_LENGTH_OFFSET, text.length);
        b.put(HEADER_SIZE, text);
        b.putInt(CRC_OFFSET, crc(b, text.length));
        return b;
    }

    /** The policy {@code b} (the whole file {@code file}) holds; a {@link CorruptionException} naming the offset when damaged. */
    static RankTreePolicy decode(ByteBuffer b, Path file) {
        b = b.duplicate().order(ByteOrder.LITTLE_ENDIAN);
        if (b.limit() < HEADER_SIZE) throw new CorruptionException("retention policy file truncated (" + b.limit() + " bytes)", file, 0);
        if (b.getLong(0) != MAGIC) throw new CorruptionException("not a retention policy file (bad magic)", file, 0);
        int version = b.getInt(VERSION_OFFSET);
        if (version != VERSION)
            throw new CorruptionException("unsupported retention policy file version " + version + " (this build reads " + VERSION + ")", file, VERSION_OFFSET);
        int length = b.getInt(TEXT_LENGTH_OFFSET);
        if (length < 0 || length > MAX_TEXT_BYTES || HEADER_SIZE + length != b.limit())
            throw new CorruptionException("retention policy file holds " + (b.limit() - HEADER_SIZE) + " bytes of text but says " + length, file,
                    TEXT_LENGTH_OFFSET);
        if (b.getInt(CRC_OFFSET) != crc(b, length)) throw new CorruptionException("retention policy file checksum mismatch", file, CRC_OFFSET);
        byte[] text = new byte[length];
        b.get(HEADER_SIZE, text);
        try {
            RankTreePolicy levels = RankTreePolicy.parse(new String(text, StandardCharsets.UTF_8));
            long budget = b.getLong(BUDGET_OFFSET);
            return budget < 0 ? levels : levels.withBudget(budget);
        } catch (IllegalArgumentException e) { // a checksummed file this build cannot read: a rule of a later build
            throw new CorruptionException("retention policy file holds rules this build does not know: " + e.getMessage(), file, HEADER_SIZE);
        }
    }

    private static int crc(ByteBuffer b, int textLength) {
        CRC32C c = new CRC32C();
        c.update(b.duplicate().position(0).limit(CRC_OFFSET));
        c.update(b.duplicate().position(HEADER_SIZE).limit(HEADER_SIZE + textLength));
        return (int) c.getValue();
    }
}
