/*
 * Glob patterns over names: what policy rules, profiles and `sluice policy`
 * match server and tool names with. Pure, no allocation.
 *
 * API:
 *   sl_glob_match("github.merge_*", "github.merge_pull_request")   true
 *   sl_glob_match("jira.get_?ssue", "jira.get_issue")              true
 */
#ifndef SL_CORE_GLOB_H
#define SL_CORE_GLOB_H

#include "core/common.h"

/* Glob match of the whole string: '*' any run (also empty, also '.'), '?'
 * exactly one UTF-8 character, everything else literally. */
bool sl_glob_match(const char *pattern, const char *s);

#endif
