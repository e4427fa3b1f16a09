#include <postgresql/libpq-fe.h>

/* poll(2)'s "the peer closed its end" (POLLRDHUP needs _GNU_SOURCE, which Swift's Glibc lacks): a
   server that ended the session has sent it, even with unread bytes before it. */
static const short p11k_poll_peer_closed = 0x2000;

/* PG_DIAG_SQLSTATE is a character constant Swift does not import as a number. */
static const int p11k_pg_diag_sqlstate = PG_DIAG_SQLSTATE;

/* libpq is opened with dlopen when a PostgreSQL store is first used (KeychainStorage/LibPQ.swift),
   not linked: a host with no such store does not load libpq and the 19 libraries it brings
   (Kerberos, LDAP, SASL, GnuTLS…). The pointer types come from libpq-fe.h's own declarations,
   so the C compiler checks them. */
typedef __typeof__(PQconnectdbParams) *p11k_PQconnectdbParams;
typedef __typeof__(PQconninfoParse) *p11k_PQconninfoParse;
typedef __typeof__(PQconninfoFree) *p11k_PQconninfoFree;
typedef __typeof__(PQfinish) *p11k_PQfinish;
typedef __typeof__(PQstatus) *p11k_PQstatus;
typedef __typeof__(PQtransactionStatus) *p11k_PQtransactionStatus;
typedef __typeof__(PQerrorMessage) *p11k_PQerrorMessage;
typedef __typeof__(PQresultStatus) *p11k_PQresultStatus;
typedef __typeof__(PQresultErrorField) *p11k_PQresultErrorField;
typedef __typeof__(PQresultErrorMessage) *p11k_PQresultErrorMessage;
typedef __typeof__(PQclear) *p11k_PQclear;
typedef __typeof__(PQntuples) *p11k_PQntuples;
typedef __typeof__(PQcmdTuples) *p11k_PQcmdTuples;
typedef __typeof__(PQgetisnull) *p11k_PQgetisnull;
typedef __typeof__(PQgetlength) *p11k_PQgetlength;
typedef __typeof__(PQgetvalue) *p11k_PQgetvalue;
typedef __typeof__(PQconsumeInput) *p11k_PQconsumeInput;
typedef __typeof__(PQnotifies) *p11k_PQnotifies;
typedef __typeof__(PQfreemem) *p11k_PQfreemem;
typedef __typeof__(PQsocket) *p11k_PQsocket;
typedef __typeof__(PQbackendPID) *p11k_PQbackendPID;
typedef __typeof__(PQsendQuery) *p11k_PQsendQuery;
typedef __typeof__(PQsendQueryParams) *p11k_PQsendQueryParams;
typedef __typeof__(PQsendPrepare) *p11k_PQsendPrepare;
typedef __typeof__(PQsendQueryPrepared) *p11k_PQsendQueryPrepared;
typedef __typeof__(PQgetResult) *p11k_PQgetResult;
typedef __typeof__(PQisBusy) *p11k_PQisBusy;
/* Pipeline mode: libpq 14 and later; looked up apart, as a host's older libpq lacks them. */
typedef __typeof__(PQenterPipelineMode) *p11k_PQenterPipelineMode;
typedef __typeof__(PQexitPipelineMode) *p11k_PQexitPipelineMode;
typedef __typeof__(PQpipelineSync) *p11k_PQpipelineSync;
