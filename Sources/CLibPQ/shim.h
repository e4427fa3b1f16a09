#include <libpq-fe.h>

/* PG_DIAG_SQLSTATE is a character constant Swift does not import as a number. */
static const int p11k_pg_diag_sqlstate = PG_DIAG_SQLSTATE;
