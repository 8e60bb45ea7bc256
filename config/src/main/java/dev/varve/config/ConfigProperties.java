package dev.varve.config;

import static dev.varve.config.ConfigLimits.*;

import java.io.IOException;
import java.io.Reader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.time.format.DateTimeParseException;
import java.util.List;
import java.util.Locale;
import java.util.Properties;
import java.util.TreeSet;
import java.util.function.Function;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

/** Reads a {@link VarveConfig} from a properties file: the value syntax, unknown keys, relative paths. */
final class ConfigProperties {

    /** The prefix without its dot. */
    private static final String STEM = PREFIX.substring(0, PREFIX.length() - 1);
    static final List<String> KEYS = List.of(PATH_PROP_NAME, PAGE_SIZE_PROP_NAME, DATA_REGION_SIZE_PROP_NAME,
            PARTITIONS_PROP_NAME, RECOVERY_MODE_PROP_NAME, RECOVERY_COMPRESSION_PROP_NAME, WAL_SYNC_MODE_PROP_NAME,
            WAL_SEGMENT_SIZE_PROP_NAME, WAL_FLUSH_FREQUENCY_PROP_NAME, CHECKPOINT_FREQUENCY_PROP_NAME,
            CHECKPOINT_THREADS_PROP_NAME, RECOVERY_THREADS_PROP_NAME, CHECKPOINT_BUFFER_SIZE_PROP_NAME, CHECKPOINT_DIRTY_RATIO_PROP_NAME,
            CHECKPOINT_WAL_VOLUME_PROP_NAME, SKIPPY_LEVELS_PROP_NAME, SKIPPY_NODE_ENTRIES_PROP_NAME, CAPTURE_BUFFER_SIZE_PROP_NAME,
            ARCHIVE_SEGMENT_SIZE_PROP_NAME, SNAPSHOT_PAGE_WINDOW_PROP_NAME, SNAPSHOT_DIFF_CHAIN_PROP_NAME, RETENTION_PROP_NAME, RETENTION_BUDGET_PROP_NAME, ARCHIVE_PATH_PROP_NAME,
            NAME_PROP_NAME);

    private static final String SIZE_SYNTAX = "a byte count or a number with suffix k, m, g or t (e.g. 64m)";
    private static final String DURATION_SYNTAX = "ISO-8601 (e.g. PT30S) or a number with unit ms, s, m, h or d (e.g. 150ms)";
    private static final Pattern SIZE = Pattern.compile("(\\d+)\\s*([kmgt]?)", Pattern.CASE_INSENSITIVE);
    private static final Pattern DURATION = Pattern.compile("(\\d+)\\s*(ms|s|m|h|d)", Pattern.CASE_INSENSITIVE);

    private ConfigProperties() {
    }

    static VarveConfig load(Path file) {
        return load(file, null);
    }

    /** {@link #load(Path)} with {@code path} (when not null) as the store's path, whatever the file says of it. */
    static VarveConfig load(Path file, Path path) {
        if (file == null) throw new IllegalArgumentException("properties file must not be null");
        Properties props = new Properties() {
            @Override
            public synchronized Object put(Object key, Object value) { // load() would keep the last of two silently
                if (containsKey(key)) throw new IllegalArgumentException(key + " is set twice");
                return super.put(key, value);
            }
        };
        try (Reader in = Files.newBufferedReader(file, StandardCharsets.UTF_8)) {
            skipByteOrderMark(in); // else it becomes part of the first key, which then lacks the prefix and is ignored
            props.load(in);
        } catch (IOException e) {
            throw new UncheckedIOException("cannot read config file " + file + ": " + e, e);
        } catch (IllegalArgumentException e) { // malformed \\uXXXX escape
            throw new IllegalArgumentException("cannot parse config file " + file + ": " + e.getMessage(), e);
        }
        try {
            return fromProperties(props, file.toAbsolutePath().getParent(), path);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid config file " + file + ": " + e.getMessage(), e);
        }
    }

    /**
     * Builds a config from {@code varve.*} properties; relative paths are resolved against {@code baseDir}, and
     * {@code path} (when not null) stands in for {@code varve.path}.
     */
    private static VarveConfig fromProperties(Properties props, Path baseDir, Path path) {
        VarveConfig.Builder b = VarveConfig.builder();
        if (path != null) b.path(path);
        RankTreePolicy retention = RETENTION_DEFAULT;
        String budgetText = null;
        for (String key : new TreeSet<>(props.stringPropertyNames())) {
            if (!key.startsWith(PREFIX)) {
                // "Varve.recoveryMode" was meant as a setting: ignoring it would run the store with the default
                if (meantForVarve(key)) throw unknownKey(key);
                continue;
            }
            String text = props.getProperty(key).strip();
            switch (key) {
                case PATH_PROP_NAME -> {
                    if (path == null) b.path(path(key, text, baseDir));
                }
                case PAGE_SIZE_PROP_NAME -> b.pageSize(intSize(key, text));
                case DATA_REGION_SIZE_PROP_NAME -> b.dataRegionSize(size(key, text));
                case PARTITIONS_PROP_NAME -> b.partitions(value(key, text, "an integer", Integer::parseInt));
                case RECOVERY_MODE_PROP_NAME -> b.recoveryMode(enumValue(key, text, RecoveryMode.class));
                case RECOVERY_COMPRESSION_PROP_NAME ->
                        b.recoveryCompression(enumValue(key, text, RecoveryCompression.class));
                case WAL_SYNC_MODE_PROP_NAME -> b.walSyncMode(enumValue(key, text, WalSyncMode.class));
                case WAL_SEGMENT_SIZE_PROP_NAME -> b.walSegmentSize(size(key, text));
                case WAL_FLUSH_FREQUENCY_PROP_NAME -> b.walFlushFrequency(duration(key, text));
                case CHECKPOINT_FREQUENCY_PROP_NAME -> b.checkpointFrequency(duration(key, text));
                case CHECKPOINT_THREADS_PROP_NAME ->
                        b.checkpointThreads(value(key, text, "an integer", Integer::parseInt));
                case RECOVERY_THREADS_PROP_NAME ->
                        b.recoveryThreads(value(key, text, "an integer", Integer::parseInt));
                case CHECKPOINT_BUFFER_SIZE_PROP_NAME -> b.checkpointBufferSize(size(key, text));
                case CHECKPOINT_DIRTY_RATIO_PROP_NAME ->
                        b.checkpointDirtyRatio(value(key, text, "a decimal number", Double::parseDouble));
                case CHECKPOINT_WAL_VOLUME_PROP_NAME -> b.checkpointWalVolume(size(key, text));
                case SKIPPY_LEVELS_PROP_NAME -> b.skippyLevels(value(key, text, "an integer", Integer::parseInt));
                case SKIPPY_NODE_ENTRIES_PROP_NAME -> b.skippyNodeEntries(value(key, text, "an integer", Integer::parseInt));
                case CAPTURE_BUFFER_SIZE_PROP_NAME -> b.captureBufferSize(size(key, text));
                case ARCHIVE_SEGMENT_SIZE_PROP_NAME -> b.archiveSegmentSize(size(key, text));
                case SNAPSHOT_PAGE_WINDOW_PROP_NAME ->
                        b.snapshotPageWindow(value(key, text, "an integer", Integer::parseInt));
                case SNAPSHOT_DIFF_CHAIN_PROP_NAME -> b.snapshotDiffChain(value(key, text, "an integer", Integer::parseInt));
                case RETENTION_PROP_NAME -> retention = value(key, text,
                        "comma-separated keepLast(n), keepFor(duration) or keepAll(), level 1 first",
                        RankTreePolicy::parse);
                case RETENTION_BUDGET_PROP_NAME -> budgetText = text;
                case ARCHIVE_PATH_PROP_NAME -> b.archivePath(path(key, text, baseDir));
                case NAME_PROP_NAME -> b.name(text);
                default -> throw unknownKey(key);
            }
        }
        if (budgetText != null) {
            RankTreePolicy levels = retention;
            retention = value(RETENTION_BUDGET_PROP_NAME, budgetText, "a positive size, " + SIZE_SYNTAX,
                    t -> levels.withBudget(parseSize(t)));
        }
        return b.retention(retention).build();
    }

    private static void skipByteOrderMark(Reader in) throws IOException {
        in.mark(1);
        if (in.read() != '\uFEFF') in.reset();
    }

    /**
     * Whether a key without the exact prefix was still meant as a setting: its first part is {@code varve} in any case
     * ({@code Varve.pageSize}, {@code varve_pageSize}, {@code varve}), or it names a setting after a misspelt prefix
     * ({@code varv.pageSize}, {@code vrave.pageSize}, {@code varvepath}). Ignoring such a key would run the store
     * with the default in its place. Other keys belong to whoever else reads the file and stay ignored.
     */
    static boolean meantForVarve(String key) {
        int separator = firstSeparator(key);
        if ((separator < 0 ? key : key.substring(0, separator)).equalsIgnoreCase(STEM)) return true;
        return meantSetting(key) != null;
    }

    /** The known key that {@code key} names after a prefix at most one edit from {@code varve}, or null. */
    private static String meantSetting(String key) {
        for (String k : KEYS) {
            String name = k.substring(PREFIX.length());
            if (key.length() < name.length() || !key.regionMatches(true, key.length() - name.length(), name, 0, name.length())) continue;
            String prefix = key.substring(0, key.length() - name.length());
            if (!prefix.isEmpty() && ".-_".indexOf(prefix.charAt(prefix.length() - 1)) >= 0) prefix = prefix.substring(0, prefix.length() - 1);
            if (editDistance(prefix.toLowerCase(Locale.ROOT), STEM) <= 1) return k;
        }
        return null;
    }

    private static int firstSeparator(String key) {
        for (int i = 0; i < key.length(); i++) if (".-_".indexOf(key.charAt(i)) >= 0) return i;
        return -1;
    }

    /** Edits (insert, delete, replace, swap of neighbours) between two short strings: the optimal string alignment distance. */
    private static int editDistance(String a, String b) {
        int[][] d = new int[a.length() + 1][b.length() + 1];
        for (int i = 0; i <= a.length(); i++) d[i][0] = i;
        for (int j = 0; j <= b.length(); j++) d[0][j] = j;
        for (int i = 1; i <= a.length(); i++) {
            for (int j = 1; j <= b.length(); j++) {
                int cost = a.charAt(i - 1) == b.charAt(j - 1) ? 0 : 1;
                d[i][j] = Math.min(Math.min(d[i - 1][j] + 1, d[i][j - 1] + 1), d[i - 1][j - 1] + cost);
                if (i > 1 && j > 1 && a.charAt(i - 1) == b.charAt(j - 2) && a.charAt(i - 2) == b.charAt(j - 1))
                    d[i][j] = Math.min(d[i][j], d[i - 2][j - 2] + 1);
            }
        }
        return d[a.length()][b.length()];
    }

    private static IllegalArgumentException unknownKey(String key) {
        String meant = KEYS.stream().filter(k -> k.equalsIgnoreCase(key)).findFirst().orElse(meantSetting(key));
        String hint = meant == null ? "" : " (did you mean " + meant + "?)";
        return new IllegalArgumentException("unknown key " + key + hint + "; known keys: " + KEYS);
    }

    /** Applies {@code parser}; any {@link RuntimeException} becomes one naming the key, text and expectation. */
    private static <T> T value(String key, String text, String expected, Function<String, T> parser) {
        try {
            return parser.apply(text);
        } catch (RuntimeException e) {
            String detail = e.getMessage() == null ? "" : " (" + e.getMessage() + ")";
            throw new IllegalArgumentException(
                    "invalid value for " + key + ": '" + text + "', expected " + expected + detail, e);
        }
    }

    private static Path path(String key, String text, Path baseDir) {
        return value(key, text, "a directory path", t -> {
            if (t.isEmpty()) {
                throw new IllegalArgumentException("empty path");
            }
            Path p = Path.of(t);
            return baseDir == null || p.isAbsolute() ? p : baseDir.resolve(p).normalize();
        });
    }

    private static long size(String key, String text) {
        return value(key, text, SIZE_SYNTAX, ConfigProperties::parseSize);
    }

    private static int intSize(String key, String text) {
        return value(key, text, SIZE_SYNTAX + " below 2 GiB", t -> Math.toIntExact(parseSize(t)));
    }

    private static Duration duration(String key, String text) {
        return value(key, text, DURATION_SYNTAX, ConfigProperties::parseDuration);
    }

    private static <E extends Enum<E>> E enumValue(String key, String text, Class<E> type) {
        for (E e : type.getEnumConstants()) {
            if (e.name().equalsIgnoreCase(text)) {
                return e;
            }
        }
        throw new IllegalArgumentException("invalid value for " + key + ": '" + text + "', expected one of "
                + List.of(type.getEnumConstants()) + " (case-insensitive)");
    }

    /**
     * Parses a byte count, optionally with a binary suffix {@code k}, {@code m}, {@code g} or
     * {@code t}, case-insensitive: {@code 64m} is 64 MiB.
     */
    static long parseSize(String text) {
        Matcher m = SIZE.matcher(text.strip());
        if (!m.matches()) {
            throw new IllegalArgumentException("invalid size '" + text + "', expected " + SIZE_SYNTAX);
        }
        int shift = switch (m.group(2).toLowerCase(Locale.ROOT)) {
            case "k" -> 10;
            case "m" -> 20;
            case "g" -> 30;
            case "t" -> 40;
            default -> 0;
        };
        try {
            long n = Long.parseLong(m.group(1));
            return Math.multiplyExact(n, 1L << shift);
        } catch (NumberFormatException | ArithmeticException e) {
            throw new IllegalArgumentException("size '" + text + "' is too large", e);
        }
    }

    /** Parses an ISO-8601 duration ({@code PT30S}) or a number with unit ms, s, m, h or d ({@code 150ms}). */
    static Duration parseDuration(String text) {
        String t = text.strip();
        try {
            if (t.startsWith("P") || t.startsWith("p") || t.startsWith("-P") || t.startsWith("-p")) {
                return Duration.parse(t);
            }
            Matcher m = DURATION.matcher(t);
            if (m.matches()) {
                long n = Long.parseLong(m.group(1));
                return switch (m.group(2).toLowerCase(Locale.ROOT)) {
                    case "ms" -> Duration.ofMillis(n);
                    case "s" -> Duration.ofSeconds(n);
                    case "m" -> Duration.ofMinutes(n);
                    case "h" -> Duration.ofHours(n);
                    default -> Duration.ofDays(n);
                };
            }
        } catch (DateTimeParseException | ArithmeticException | NumberFormatException e) {
            throw new IllegalArgumentException("invalid duration '" + text + "', expected " + DURATION_SYNTAX, e);
        }
        throw new IllegalArgumentException("invalid duration '" + text + "', expected " + DURATION_SYNTAX);
    }
}
