package dev.varve.config;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import java.util.OptionalLong;
import java.util.stream.Collectors;

/**
 * Snapshot retention: one {@link Retention} rule per rank level, level 1 first, and an optional
 * archive budget in bytes. A snapshot of rank {@code r} counts at levels {@code 1..r} and is live
 * while any of those levels keeps it. Over the budget, the oldest snapshots of the lowest level are
 * dropped first.
 *
 * <p>Immutable. The default, {@link #keepEverything()}, keeps every snapshot with no budget.
 */
public final class RankTreePolicy {

    /** The most rank levels a policy may have. */
    public static final int MAX_LEVELS = 16;

    private static final RankTreePolicy KEEP_EVERYTHING = new RankTreePolicy(List.of(Retention.keepAll()), -1);

    private final List<Retention> levels;
    /** -1 when there is no budget. */
    private final long budgetBytes;

    private RankTreePolicy(List<Retention> levels, long budgetBytes) {
        this.levels = levels;
        this.budgetBytes = budgetBytes;
    }

    /**
     * Creates a policy with one rule per rank level and no budget.
     *
     * @param perLevel the rules, level 1 first; 1 to {@value #MAX_LEVELS} of them, none null
     * @return the policy
     * @throws IllegalArgumentException if there are no levels, too many, or a null rule
     */
    public static RankTreePolicy levels(Retention... perLevel) {
        if (perLevel == null || perLevel.length < 1 || perLevel.length > MAX_LEVELS) {
            throw new IllegalArgumentException("retention levels must be 1.." + MAX_LEVELS + " rules, was "
                    + (perLevel == null ? "null" : perLevel.length + " rules"));
        }
        for (int i = 0; i < perLevel.length; i++) {
            if (perLevel[i] == null) {
                throw new IllegalArgumentException("retention rule of level " + (i + 1) + " must not be null");
            }
        }
        return new RankTreePolicy(List.of(perLevel), -1);
    }

    /**
     * Returns the default policy: a single level that keeps every snapshot, no budget.
     *
     * @return {@code levels(Retention.keepAll())}
     */
    public static RankTreePolicy keepEverything() {
        return KEEP_EVERYTHING;
    }

    /**
     * Parses comma-separated rules, level 1 first, e.g. {@code keepLast(60),keepFor(PT24H),keepAll()};
     * see {@link Retention#parse(String)}.
     *
     * @param levels the rules
     * @return a policy without budget
     * @throws IllegalArgumentException naming the text if it is not a valid list of rules
     */
    public static RankTreePolicy parse(String levels) {
        if (levels == null || levels.isBlank()) {
            throw new IllegalArgumentException("retention levels must not be empty, was '" + levels + "'");
        }
        List<Retention> rules = new ArrayList<>();
        int depth = 0;
        int start = 0;
        for (int i = 0; i <= levels.length(); i++) {
            if (i == levels.length() && depth > 0) throw new IllegalArgumentException("invalid retention levels '" + levels + "': unclosed '('");
            char c = i < levels.length() ? levels.charAt(i) : ',';
            if (c == '(') {
                depth++;
            } else if (c == ')') {
                if (--depth < 0) throw new IllegalArgumentException("invalid retention levels '" + levels + "': unbalanced ')' at index " + i);
            } else if (c == ',' && depth == 0) {
                rules.add(Retention.parse(levels.substring(start, i)));
                start = i + 1;
            }
        }
        try {
            return levels(rules.toArray(new Retention[0]));
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("invalid retention levels '" + levels + "': " + e.getMessage(), e);
        }
    }

    /**
     * Returns a copy of this policy with an archive budget.
     *
     * @param bytes the most bytes the snapshot archive may hold, positive
     * @return the new policy
     * @throws IllegalArgumentException if {@code bytes <= 0}
     */
    public RankTreePolicy withBudget(long bytes) {
        if (bytes <= 0) {
            throw new IllegalArgumentException("retention budget must be > 0 bytes, was " + bytes);
        }
        return new RankTreePolicy(levels, bytes);
    }

    /**
     * Returns the rules, level 1 first.
     *
     * @return an unmodifiable list of 1 to {@value #MAX_LEVELS} rules
     */
    public List<Retention> levels() {
        return levels;
    }

    /**
     * Returns the number of rank levels.
     *
     * @return 1 to {@value #MAX_LEVELS}
     */
    public int levelCount() {
        return levels.size();
    }

    /**
     * Returns the archive budget.
     *
     * @return the budget in bytes, or empty when there is none
     */
    public OptionalLong budgetBytes() {
        return budgetBytes < 0 ? OptionalLong.empty() : OptionalLong.of(budgetBytes);
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof RankTreePolicy p && budgetBytes == p.budgetBytes && levels.equals(p.levels);
    }

    @Override
    public int hashCode() {
        return Objects.hash(levels, budgetBytes);
    }

    /** Returns the rules in {@link #parse(String)} syntax, plus the budget if any. */
    @Override
    public String toString() {
        String rules = levels.stream().map(Retention::toString).collect(Collectors.joining(","));
        return budgetBytes < 0 ? rules : rules + " budget=" + budgetBytes;
    }
}
